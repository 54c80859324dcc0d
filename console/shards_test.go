package console_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

// TestShardedQueuePages serves the console of a queue of three shards:
// the pending pages list every shard's tasks (shard after shard), a task
// page finds its task in its shard, the running and dead pages and the
// queue page's counts cover every shard.
func TestShardedQueuePages(t *testing.T) {
	e := newEnvOf(t, nil, queue.Config{Shards: 3}, console.Options{})
	tasks := make([]*queue.Task, 120)
	for i := range tasks {
		tasks[i] = queue.NewTask("t", []byte(fmt.Sprint(i)))
	}
	infos, err := e.q.EnqueueBatch(e.ctx, tasks, queue.Level(1))
	require.NoError(t, err)
	var pages strings.Builder
	for _, off := range []int{0, 50, 100} {
		_, body := e.get(fmt.Sprintf("/pending?level=1&offset=%d", off))
		require.Contains(t, body, " of 120")
		pages.WriteString(body)
	}
	for _, in := range infos {
		require.Contains(t, pages.String(), in.ID, "every shard's task is listed")
	}

	w := testworker.New(e.q, "w-shards")
	var leased []string
	for range 6 {
		tk, err := w.LeaseOne(e.ctx, 0)
		require.NoError(t, err)
		leased = append(leased, tk.ID)
	}
	_, body := e.get("/running")
	for _, id := range leased {
		require.Contains(t, body, id)
	}
	for _, id := range leased[:3] {
		_, body = e.get("/task?id=" + url.QueryEscape(id))
		require.Contains(t, body, `by <span class="mono">w-shards</span>`, "task %s", id)
	}
	dead := e.kill("bad", "x", "broken")
	_, body = e.get("/dead")
	require.Contains(t, body, dead)
	_, body = e.get("/")
	require.Contains(t, body, `<td class="n">114</td>`, "the queue page sums the shards' pending tasks")
}
