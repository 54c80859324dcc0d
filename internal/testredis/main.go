package testredis

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/overtake/overtake/internal/redisproc"
)

// Main is the body of TestMain for packages that use testredis:
//
//	func TestMain(m *testing.M) { testredis.Main(m) }
//
// It runs the tests, stops every redis-server this package started in the
// test binary (the shared one included), and, if the tests passed, fails the
// run when goroutines leaked, like goleak.VerifyTestMain. opts are passed to
// goleak (e.g. goleak.IgnoreTopFunction for a known background goroutine),
// after IgnoreAnts. Main does not return.
func Main(m *testing.M, opts ...goleak.Option) {
	opts = append(IgnoreAnts(), opts...)
	code := m.Run()
	redisproc.KillAll()
	if shared.srv != nil {
		_ = shared.srv.Close() // removes its data directory
	}
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// IgnoreAnts ignores the goroutines of the package-level default pool that
// github.com/panjf2000/ants/v2 starts at init: not ours, never stopped.
func IgnoreAnts() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	}
}
