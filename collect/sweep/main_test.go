package sweep

import (
	"os"
	"testing"

	"github.com/headroom-llm/headroom/internal/fakeserver"
)

// TestMain lets the test binary be a server process for --server-cmd
// (internal/fakeserver).
func TestMain(m *testing.M) {
	fakeserver.MaybeServe()
	os.Exit(m.Run())
}
