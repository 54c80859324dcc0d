package store

// enqueuePendingScript is lua/enqueue_pending.lua: it stores a chunk of
// new pending tasks, grouped by level, with three ARGV a task where
// enqueueManyScript takes eight.
var enqueuePendingScript = script("enqueue_pending.lua")

// chunkCall builds the script call of the tasks at(0..n-1), the first
// prepared at now: enqueuePendingScript's when every task is pending, not
// unique and has an ID made here (pendingOnly), the common case, else
// enqueueManyScript's. order is nil when the call holds the tasks in
// their order, else order[j] is the task at the call's j-th place, whose
// reply is the j-th entry (enqueueReplies).
func (c *Store) chunkCall(now int64, n int, at func(int) *enqWait) (call batchCall, order []int) {
	if !pendingOnly(n, at) {
		call = c.newBatchCall(now, n)
		for i := range n {
			call.add(c, at(i))
		}
		call.close(c)
		return call, nil
	}
	order = byLevel(n, c.cfg.Levels, at)
	if order != nil {
		at0 := at
		at = func(j int) *enqWait { return at0(order[j]) }
	}
	return c.newPendingCall(now, n, at), order
}

// pendingOnly reports whether enqueuePendingScript may store the tasks
// at(0..n-1): none scheduled, none unique, every ID made here (no
// res:<id> to clear).
func pendingOnly(n int, at func(int) *enqWait) bool {
	for i := range n {
		if nt := &at(i).nt; nt.State == StateScheduled || nt.unique > 0 || nt.clearResult {
			return false
		}
	}
	return true
}

// byLevel orders the tasks at(0..n-1) of a queue of levels levels by
// level, keeping their order within a level: order[j] is the task at the
// j-th place. It returns nil when they are in that order already.
func byLevel(n, levels int, at func(int) *enqWait) []int {
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = at(i-1).nt.Level <= at(i).nt.Level
	}
	if sorted {
		return nil
	}
	next := make([]int, levels+1) // next[l]: the place of level l's next task
	for i := range n {
		next[at(i).nt.Level+1]++
	}
	for l := 1; l <= levels; l++ {
		next[l] += next[l-1]
	}
	order := make([]int, n)
	for i := range n {
		l := at(i).nt.Level
		order[next[l]] = i
		next[l]++
	}
	return order
}

// newPendingCall builds the enqueuePendingScript call of the tasks
// at(0..n-1), ordered by level, the first prepared at now: KEYS the lists
// of their levels, then their records; ARGV the prefix, now, the number
// of levels, the levels, each one's count, then the IDs, the records'
// heads and the bodies.
func (c *Store) newPendingCall(now int64, n int, at func(int) *enqWait) batchCall {
	g := 0 // levels
	for i := range n {
		if i == 0 || at(i).nt.Level != at(i-1).nt.Level {
			g++
		}
	}
	b := batchCall{script: enqueuePendingScript, keys: make([]string, 0, g+n), args: make([]any, 3+2*g, 3+2*g+3*n)}
	b.args[0], b.args[1], b.args[2] = c.sk.prefix, c.nowArg(now), g
	lv, cnt := b.args[3:3+g], b.args[3+g:3+2*g]
	for i, k := 0, 0; i < n; k++ {
		l, j := at(i).nt.Level, i+1
		for j < n && at(j).nt.Level == l {
			j++
		}
		b.keys = append(b.keys, c.sk.pending[l])
		lv[k], cnt[k], i = l, j-i, j
	}
	for i := range n {
		w := at(i)
		b.keys = append(b.keys, c.keys.task(w.nt.ID))
		b.args = append(b.args, w.id)
	}
	for i := range n {
		b.args = append(b.args, c.sk.head(&at(i).nt))
	}
	for i := range n {
		b.args = append(b.args, at(i).body)
	}
	return b
}
