package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// groupCommit batches concurrent calls into shared Redis calls (group
// commit), for Ack and Enqueue: a caller that finds no call in flight
// sends everything queued so far, up to limit per call, and keeps sending
// until the queue is empty; the others wait for their answer. A few calls
// may be in flight at once (flushers), so one slow call (Redis unreachable)
// does not hold every other caller behind it; a call beside others goes
// out once its share of the outstanding items waits for it (see need), and
// a call that comes back to fewer leaves them to the others in flight (the
// last one sends whatever is left). Under load many callers share one
// round trip, so a batch costs one call and a handful of Redis commands
// however large it is; a lone call is sent at once, with no added delay.
type groupCommit[T any] struct {
	limit     int                                // items per call
	send      func(context.Context, []T) []error // one call for a batch: an error per item
	flushers  int                                // calls in flight at most (0: maxFlushers)
	minBatch  int                                // the most a call beside others waits for (0: none; see need)
	shareWait time.Duration                      // how long at most (0: shareWait)

	// pool, when set, bounds the calls in flight of this group and others
	// together (flushPool), on top of flushers.
	pool *flushPool

	// waits recycles do's waits (groupWait), each with its channel (two
	// allocations an Enqueue or Ack saves): one goes back once answered.
	waits sync.Pool

	mu       sync.Mutex
	queued   []*groupWait[T]
	flushing int
	inCalls  int // items in the calls in flight
	recent   int // the most items outstanding lately, fading call by call (see need)

	// The share watch (watchShare): one timer for every item waiting for
	// its share, and while it is armed the context its rescue sends with
	// (the arming caller's, without its cancel); nil when it is not.
	watch    *time.Timer
	watchCtx context.Context
}

// maxFlushers bounds the grouped calls in flight at once, unless a group
// says otherwise: one, so that callers pile up behind it into larger
// batches (Redis spends per call more than per item) and queued acks are
// left for a lease call to carry.
const maxFlushers = 1

// enqueueFlushers is the Enqueue group's bound: two calls in flight keep
// many concurrent producers busy where one would leave them waiting, and
// leave the others to pile up into calls of enqueueMinBatch.
//
// enqueueMinBatch caps the share of outstanding Enqueues a call beside
// others waits for (see need). Without it a producer answered by one call
// found a free turn and went alone (with 16 producers 60% of the calls
// carried one task).
//
// The pair was 4 and 4 (about 4 tasks a call at 16 producers). 2 and 8,
// BenchmarkEnqueueOnRedis on a real redis-server, 3 runs of 40k tasks
// alternating with 4 and 4 (medians, before → after): 16 producers 0.265
// → 0.156 calls/task, 21.2 → 17.1 µs/op, client CPU 19.0 → 16.2 µs/task,
// redis-server CPU 14.4 → 9.8 µs/task; 32 producers 16.9 → 14.2 µs/op,
// 15.5 → 13.2 and 10.6 → 8.4 µs/task; 8 producers 30.2 → 28.5 µs/op, 28.1
// → 25.1 and 20.0 → 17.5 µs/task; 2 producers unchanged (a call a task
// either way). 3 and 8 fell between the two.
//
// enqueueMinBatch went 8 → 16 when need began counting the callers of
// late (recent): the cap is reached only past 16 producers, where calls
// of 16 beside one another cost each task less (32 producers, real
// redis-server, 3 pairs: 0.095 → 0.067 calls a task, µs/op 14.3/13.8/10.9
// → 11.6/11.4/13.2; 16 producers 0.157 → 0.131 with recent alone).
const (
	enqueueFlushers = 2
	enqueueMinBatch = 16
)

// shardEnqueueTurns is the calls in flight the Enqueue groups of a
// queue's shards share (flushPool). It stayed 4 when one shard's
// enqueueFlushers went to 2: with 2 turns for 3 shards, single Enqueues
// from 64 goroutines on the 3-master cluster (overtake-bench --only
// shards) fell to 27–61k a second against 60–81k with 4, and the busiest
// master's CPU per task did not fall.
const shardEnqueueTurns = 4

// shareWait bounds how long an Enqueue waits for its share of a call
// while calls in flight are slow (watchShare): calls answer in well under
// a millisecond, so it is only reached when one stalls.
const shareWait = 5 * time.Millisecond

// groupTimeout bounds a batch's call: it is not tied to one caller's
// context, since it carries the items of others.
const groupTimeout = 5 * time.Second

type groupWait[T any] struct {
	item T
	done chan error
}

func (g *groupCommit[T]) do(ctx context.Context, item T) error {
	w, _ := g.waits.Get().(*groupWait[T])
	if w == nil {
		w = &groupWait[T]{done: make(chan error, 1)}
	}
	w.item = item
	g.mu.Lock()
	g.queued = append(g.queued, w)
	g.recent = max(g.recent, len(g.queued)+g.inCalls)
	lead := (g.flushing == 0 || (g.flushing < cmp.Or(g.flushers, maxFlushers) && len(g.queued) >= g.need())) &&
		g.pool.take()
	if lead {
		g.flushing++
	} else if g.minBatch > 1 {
		g.watchShare(ctx)
	}
	g.mu.Unlock()
	if lead {
		g.flush(ctx, w, false)
	}
	select {
	case err := <-w.done:
		g.recycle(w)
		return err
	case <-ctx.Done():
		select {
		case err := <-w.done: // answered as ctx ended: the answer counts
			g.recycle(w)
			return err
		default:
		}
		// The call may still go through: like any write whose answer is
		// lost, the caller retries (an enqueue with the same ID gets
		// ErrDuplicateTask if it was stored). w is not recycled: that
		// call may still answer it.
		return ctx.Err()
	}
}

// idle reports whether the group has no call in flight and nothing
// queued (fillShard reads it).
func (g *groupCommit[T]) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.flushing == 0 && len(g.queued) == 0
}

// recycle gives back an answered wait of do: nothing refers to it once
// answered (a call sends each answer last, and a lease call's answer
// too), so the next caller may take it.
func (g *groupCommit[T]) recycle(w *groupWait[T]) {
	var zero T
	w.item = zero
	g.waits.Put(w)
}

// watchShare bounds how long items wait for their share (see need) when
// the calls they wait on are slow: shareWait after the first of them
// came, if items are still queued and a call turn is free, they are sent
// (rescueShare), as a lone call would have gone. One timer serves every
// waiting item, armed by the first while none is (a timer per item cost
// two allocations and a timer heap insertion per Enqueue). The caller
// holds mu.
func (g *groupCommit[T]) watchShare(ctx context.Context) {
	if g.watchCtx != nil {
		return
	}
	g.watchCtx = context.WithoutCancel(ctx)
	d := cmp.Or(g.shareWait, shareWait)
	if g.watch == nil {
		g.watch = time.AfterFunc(d, g.rescueShare)
	} else {
		g.watch.Reset(d)
	}
}

// rescueShare sends what is queued when the share watch ends, if a call
// turn is free; with every turn taken, it watches again for what is still
// queued then (a call that comes back may leave it for another in flight).
func (g *groupCommit[T]) rescueShare() {
	g.mu.Lock()
	ctx := g.watchCtx
	g.watchCtx = nil
	lead := len(g.queued) > 0 && g.flushing < cmp.Or(g.flushers, maxFlushers) && g.pool.take()
	if lead {
		g.flushing++
	} else if len(g.queued) > 0 {
		g.watchShare(ctx)
	}
	g.mu.Unlock()
	if lead {
		g.flush(ctx, nil, true)
	}
}

// queue adds item without sending it (no caller leads): it waits for a
// call that takes it (take) or for flushQueued.
func (g *groupCommit[T]) queue(item T) *groupWait[T] {
	w := &groupWait[T]{item: item, done: make(chan error, 1)}
	g.mu.Lock()
	g.queued = append(g.queued, w)
	g.mu.Unlock()
	return w
}

// size is how many items are queued.
func (g *groupCommit[T]) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queued)
}

// flushQueued sends what is queued, unless a call of the group is in
// flight already (it sends the rest before it stops). It returns once the
// queue is empty or another caller flushes.
func (g *groupCommit[T]) flushQueued(ctx context.Context) {
	g.mu.Lock()
	lead := len(g.queued) > 0 && g.flushing < cmp.Or(g.flushers, maxFlushers) && g.pool.take()
	if lead {
		g.flushing++
	}
	g.mu.Unlock()
	if lead {
		g.flush(ctx, nil, false)
	}
}

// take removes up to n queued items, for a caller that sends them in a
// call of its own (a lease carries the queued acks) and answers each with
// answer.
func (g *groupCommit[T]) take(n int) []*groupWait[T] {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pop(min(n, len(g.queued)))
}

// pop removes the first n queued items and returns them in a slice of
// their own (the caller may append to it: a lease call adds the Ack
// group's items to the carried ones). The queue keeps its backing array,
// so queueing costs no allocation once it has grown. The caller holds mu.
func (g *groupCommit[T]) pop(n int) []*groupWait[T] {
	batch := slices.Clone(g.queued[:n])
	left := copy(g.queued, g.queued[n:])
	clear(g.queued[left:]) // no stale pointers for the collector
	g.queued = g.queued[:left]
	return batch
}

// answer gives each taken item its error.
func answer[T any](batch []*groupWait[T], errs []error) {
	for i, w := range batch {
		w.done <- errs[i]
	}
}

// flush sends batches until none is queued. A caller flushing for its own
// item (own) stops once that is answered: if more wait, a goroutine takes
// over its turn, so no caller is held up by the items of others. With
// force the first batch goes whatever its size (see rescueShare).
func (g *groupCommit[T]) flush(ctx context.Context, own *groupWait[T], force bool) {
	sent := 0 // items of this flusher's last call, answered
	for {
		g.mu.Lock()
		g.inCalls -= sent // answered: every path below returns or sets sent anew
		n := min(len(g.queued), g.limit)
		if n == 0 || (!force && g.flushing > 1 && n < g.need()) {
			g.flushing--
			g.mu.Unlock()
			g.pool.give(ctx)
			return
		}
		if own != nil && len(own.done) > 0 {
			g.mu.Unlock()
			go g.flush(context.WithoutCancel(ctx), nil, false) // hand the turn over
			return
		}
		batch := g.pop(n)
		g.recent -= (g.recent + 7) >> 3 // an eighth a call, down to 0
		g.inCalls += n
		sent, force = n, false
		g.mu.Unlock()
		items := make([]T, len(batch))
		for i, w := range batch {
			items[i] = w.item
		}
		var errs []error
		if len(batch) == 1 && batch[0] == own {
			// The caller's own item alone: its call, under its context (no
			// context or timer of its own to make).
			errs = g.send(ctx, items)
		} else {
			deadline := time.Now().Add(groupTimeout)
			if dl, ok := ctx.Deadline(); ok && len(batch) == 1 {
				deadline = dl // a lone call keeps its caller's deadline
			}
			bctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
			errs = g.send(bctx, items)
			cancel()
		}
		for i, w := range batch {
			w.done <- errs[i]
		}
	}
}

// need is how many queued items a call beside others in flight waits for:
// an even share of the items outstanding (queued and in calls, or as many
// as were outstanding lately: recent) over the calls allowed in flight, at
// least 1 and at most minBatch. A few callers thus still go side by side,
// one item each, as they would alone, while many share calls of up to
// minBatch items. recent counts the callers a call just answered, on their
// way back with their next item: counting only those queued, a call beside
// another went with 6 or 7 items at 16 producers, since a few of the 16
// were always between two Enqueues. It fades by an eighth a call, so that
// callers gone are forgotten; meanwhile an item that waits for them waits
// at most for the call in flight, which sends what it finds queued when
// it comes back. The caller holds mu.
func (g *groupCommit[T]) need() int {
	if g.minBatch <= 1 {
		return 1
	}
	fl := cmp.Or(g.flushers, maxFlushers)
	return min(max((max(len(g.queued)+g.inCalls, g.recent)+fl-1)/fl, 1), g.minBatch)
}

// flushPool bounds the calls in flight of several groups together: the
// Enqueue groups of a queue's shards share shardEnqueueTurns turns. A call
// goes out only with a turn; a caller that finds none queues its item, and
// the turn's holder, done, hands it to the group with the most items
// queued and no call in flight (give), so the calls carry what piled up,
// as on a queue of one shard (with turns of their own, each shard's calls
// carried a third as many on 3 shards). A nil pool bounds nothing.
type flushPool struct {
	turns  chan struct{}
	groups []poolGroup
}

// poolGroup is a group of a flushPool: how many items it has queued with
// no call in flight, and kick, which starts a call for them if a turn is
// free.
type poolGroup struct {
	waiting func() int
	kick    func(context.Context)
}

// newFlushPool returns a pool of n turns.
func newFlushPool(n int) *flushPool {
	p := &flushPool{turns: make(chan struct{}, n)}
	for range n {
		p.turns <- struct{}{}
	}
	return p
}

// joinPool adds g to p.
func joinPool[T any](p *flushPool, g *groupCommit[T]) {
	g.pool = p
	p.groups = append(p.groups, poolGroup{waiting: g.waiting, kick: g.kick})
}

// take takes a turn if one is free.
func (p *flushPool) take() bool {
	if p == nil {
		return true
	}
	select {
	case <-p.turns:
		return true
	default:
		return false
	}
}

// give returns a turn, then starts a call in the group with the most
// items waiting without one, if any. Should a caller take the turn first,
// its call ends in give too, so no waiting item is left without one.
func (p *flushPool) give(ctx context.Context) {
	if p == nil {
		return
	}
	p.turns <- struct{}{}
	best, most := -1, 0
	for i, g := range p.groups {
		if n := g.waiting(); n > most {
			best, most = i, n
		}
	}
	if best >= 0 {
		p.groups[best].kick(ctx)
	}
}

// waiting is how many items g has queued when it has no call in flight.
func (g *groupCommit[T]) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.flushing > 0 {
		return 0
	}
	return len(g.queued)
}

// kick starts a call for the queued items when g has none in flight and a
// turn is free.
func (g *groupCommit[T]) kick(ctx context.Context) {
	g.mu.Lock()
	lead := len(g.queued) > 0 && g.flushing == 0 && g.pool.take()
	if lead {
		g.flushing++
	}
	g.mu.Unlock()
	if lead {
		go g.flush(context.WithoutCancel(ctx), nil, false)
	}
}
