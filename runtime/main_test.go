package runtime_test

import (
	"os"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
)

// testredis.Main checks for leaked goroutines (ants' own pool aside). Run
// with OVERTAKE_TEST_WORKER set, the test binary is a worker process
// instead (see workerproc_test.go), for tests that kill -9 one.
func TestMain(m *testing.M) {
	if os.Getenv(envWorker) != "" {
		os.Exit(workerProcess())
	}
	if os.Getenv(envCancelWorker) != "" {
		os.Exit(cancelWorkerProcess()) // cancel_proc_test.go
	}
	testredis.Main(m)
}
