package uniq

import (
	"slices"
	"testing"
)

func TestAppend(t *testing.T) {
	if got := Append([]string{"a", "b"}, "b", "c", "a", "c", ""); !slices.Equal(got, []string{"a", "b", "c", ""}) {
		t.Errorf("Append: %q", got)
	}
	if got := AppendNonZero([]string{"a"}, "", "b", "a", "b"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("AppendNonZero: %q", got)
	}
	if got := Append([]int(nil), 0, 2, 0); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("ints: %v (device 0 is a value, not absence)", got)
	}
}
