package runtime_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A worker process for kill -9 tests: the test binary re-executed with
// these variables set runs a runtime whose "job" handler blocks until the
// process dies, for at most two minutes.
const (
	envWorker      = "OVERTAKE_TEST_WORKER"       // the worker ID
	envWorkerAddr  = "OVERTAKE_TEST_WORKER_ADDR"  // Redis host:port
	envWorkerNS    = "OVERTAKE_TEST_WORKER_NS"    // queue namespace
	envWorkerSlots = "OVERTAKE_TEST_WORKER_SLOTS" // Concurrency
	// envWorkerPeriodic, when set, is the Spec of a Periodic "tick" that
	// enqueues a task of type "tick" at level 1, whose handler appends
	// the task's ID to the list ranKey(namespace) and succeeds.
	envWorkerPeriodic = "OVERTAKE_TEST_WORKER_PERIODIC"
)

func workerProcess() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envWorkerAddr)})
	defer rdb.Close()
	shards, err := envShards()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	q, err := queue.New(rdb, queue.Config{Namespace: os.Getenv(envWorkerNS), Shards: shards})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, _ *queue.TaskInfo) error {
		<-ctx.Done()
		return ctx.Err()
	})
	mux.HandleFunc("tick", func(ctx context.Context, tk *queue.TaskInfo) error {
		return rdb.RPush(ctx, ranKey(os.Getenv(envWorkerNS)), tk.ID).Err()
	})
	slots, _ := strconv.Atoi(os.Getenv(envWorkerSlots))
	cfg := runtime.Config{Concurrency: slots, WorkerID: os.Getenv(envWorker)}
	if spec := os.Getenv(envWorkerPeriodic); spec != "" {
		cfg.Periodic = []runtime.Periodic{{Name: "tick", Spec: spec, Task: queue.NewTask("tick", nil, queue.Level(1))}}
	}
	return runProcess(ctx, q, mux, cfg)
}

// runProcess is the end of a worker process's main: it runs a runtime of
// q, h and cfg until ctx ends, and returns the exit code.
func runProcess(ctx context.Context, q *queue.Client, h handlers.Handler, cfg runtime.Config) int {
	rt, err := runtime.New(q, h, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := rt.Run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startWorkerProcess starts a worker process with id and slots on addr's
// queue in namespace ns, with env added to its environment; it is killed
// at cleanup if still alive.
func startWorkerProcess(t *testing.T, addr, ns, id string, slots int, env ...string) *exec.Cmd {
	t.Helper()
	return startTestProcess(t, append([]string{envWorker + "=" + id, envWorkerAddr + "=" + addr, envWorkerNS + "=" + ns,
		envWorkerSlots + "=" + strconv.Itoa(slots)}, env...)...)
}

// startTestProcess starts the test binary again, running no test, with env
// added to its environment (TestMain then runs the worker process it
// names); it is killed at cleanup if still alive.
func startTestProcess(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// kill9 SIGKILLs the worker process and waits until it is gone.
func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// ranKey is the list a worker process's "tick" handler appends to.
func ranKey(ns string) string { return ns + ":ran" }
