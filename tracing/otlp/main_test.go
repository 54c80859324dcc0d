package otlp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// provider and exporter the tests build must be shut down.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
