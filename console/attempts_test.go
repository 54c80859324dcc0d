package console_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/queue"
)

// The task page says a task's failed runs against its budget as the
// overtake command's inspect does, "retry" when there is one, and never
// "retries allowed".
func TestTaskPageAttemptsInTheCLIsWords(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	for retries, want := range map[int]string{
		0: "0 failed of at most 1 (the first run and 0 retries)",
		1: "0 failed of at most 2 (the first run and 1 retry)",
		3: "0 failed of at most 4 (the first run and 3 retries)",
	} {
		id := e.enqueue("report", "{}", 1, queue.MaxRetries(retries))
		_, body := e.get("/task?id=" + url.QueryEscape(id))
		require.Contains(t, body, "<dt>Runs</dt><dd>0 · "+want+" · 0 preempted", "MaxRetries %d", retries)
		require.NotContains(t, body, "retries allowed")
	}
}
