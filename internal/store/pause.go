package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// PauseMode says what a pause does to the running tasks of a level.
type PauseMode int

const (
	// NotPaused is the mode of a level that is not paused.
	NotPaused PauseMode = iota
	// PauseWait stops leasing from the level and lets its running tasks
	// finish.
	PauseWait
	// PausePreempt also preempts the level's running tasks: each saves its
	// checkpoint and goes back to the head of its level, to resume from
	// there after Resume.
	PausePreempt
)

// String returns "running", "paused" or "paused (preempt)".
func (m PauseMode) String() string {
	switch m {
	case PauseWait:
		return "paused"
	case PausePreempt:
		return "paused (preempt)"
	}
	return "running"
}

// AllLevels selects every level of the queue in Pause and Resume.
const AllLevels = -1

// pauseScript is lua/pause.lua: it rewrites the set of paused levels and
// tells every worker on the wake channel.
var pauseScript = script("pause.lua")

// Pause stops every worker of the fleet from leasing tasks at level (or at
// every level with AllLevels) from the moment it returns: the lease script
// reads the paused levels with the records it pops (no extra command) and
// puts a paused level's tasks back untouched. Workers are also told on the
// wake channel (and by their next heartbeat), so they stop asking. A paused level still accepts tasks, and no preemption
// happens on its behalf. With PauseWait its running tasks finish; with
// PausePreempt they are preempted (checkpoint saved, requeued at the head
// of their level). The pause is stored in Redis, so it survives worker and
// Redis restarts (with persistence), until Resume. Pausing a paused level
// again changes its mode.
func (c *Store) Pause(ctx context.Context, level int, mode PauseMode) error {
	if mode != PauseWait && mode != PausePreempt {
		return fmt.Errorf("%w: pause mode %d: want PauseWait or PausePreempt", ErrInvalidTask, mode)
	}
	return c.setPause(ctx, "pause", level, map[PauseMode]string{PauseWait: "w", PausePreempt: "p"}[mode])
}

// Resume lets workers lease from level (or every level with AllLevels)
// again; idle workers are woken at once.
func (c *Store) Resume(ctx context.Context, level int) error {
	return c.setPause(ctx, "resume", level, "")
}

func (c *Store) setPauseOne(ctx context.Context, op string, level int, mode string) error {
	first, last := level, level
	if level == AllLevels {
		first, last = 0, c.cfg.Levels-1
	} else if level < 0 || level >= c.cfg.Levels {
		return fmt.Errorf("%w: %s level %d: want 0..%d or AllLevels", ErrInvalidLevel, op, level, c.cfg.Levels-1)
	}
	if err := c.ready(ctx); err != nil {
		return err
	}
	err := c.run(ctx, pauseScript, c.keys.declare(c.sk.pause), c.keys.prefix, first, last, mode).Err()
	if err != nil {
		return wrapf(scriptErr(err), "%s", op)
	}
	return nil
}

// PausedFromMessage decodes a wake-channel message that announces the
// paused levels ("p" and the paused key's value); ok is false for other
// messages.
func (c *Store) PausedFromMessage(payload string) (paused map[int]PauseMode, ok bool) {
	v, ok := strings.CutPrefix(payload, "p")
	if !ok {
		return nil, false
	}
	return c.parsePaused(v), true
}

// Paused returns the paused levels and their modes; levels that are not
// paused are absent.
func (c *Store) Paused(ctx context.Context) (map[int]PauseMode, error) {
	v, err := c.rdb.Get(ctx, c.keys.paused()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		if strings.Contains(err.Error(), "WRONGTYPE") {
			return nil, wrapf(fmt.Errorf("%w: %s is a %s, want a string", ErrCorrupt, c.keys.paused(),
				c.rdb.Type(ctx, c.keys.paused()).Val()), "paused")
		}
		return nil, wrapf(err, "paused")
	}
	return c.parsePaused(v), nil
}

// parsePaused decodes the paused key's value; unknown levels and modes are
// ignored (a level removed from the config, a newer writer).
func (c *Store) parsePaused(v string) map[int]PauseMode {
	out := map[int]PauseMode{}
	for f := range strings.SplitSeq(v, ",") {
		ls, m, ok := strings.Cut(f, ":")
		l, err := strconv.Atoi(ls)
		if !ok || err != nil || l < 0 || l >= c.cfg.Levels {
			continue
		}
		switch m {
		case "w":
			out[l] = PauseWait
		case "p":
			out[l] = PausePreempt
		}
	}
	return out
}
