package fdreserve

import "testing"

func TestReserve(t *testing.T) {
	r := New(4)
	if r.Held() != 4 {
		t.Fatalf("held %d", r.Held())
	}
	r.Release()
	if r.Held() != 0 {
		t.Fatalf("held %d after Release", r.Held())
	}
	if n := r.Refill(); n != 4 {
		t.Fatalf("refilled %d", n)
	}
	r.Release()
}
