package testredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBusyKey is returned (wrapped) by [Migration.Step] when the target
// master already holds a key the source is moving: MIGRATE answered
// BUSYKEY. A correct client never writes a key on both masters, so this
// means one wrote it on the target (after an ASK redirect) while the source
// still had it. Without MigrateOptions.Replace the slot stays half-moved,
// as `redis-cli --cluster reshard` leaves it without --cluster-replace.
var ErrBusyKey = errors.New("testredis: target master already holds a key of the slot (BUSYKEY)")

// MigrateOptions tune a slot migration ([Cluster.StartMigration],
// [Cluster.MigrateSlot]).
type MigrateOptions struct {
	// To is the address of the master that receives the slot; "" picks
	// the master after the owner in Cluster.Addrs.
	To string
	// Batch is how many keys one MIGRATE moves; 0 means 10, as
	// `redis-cli --cluster reshard` does (--cluster-pipeline).
	Batch int
	// Pause is how long MigrateSlot waits between batches, so that clients
	// meet the slot half-moved (keys on both masters, ASK redirects).
	Pause time.Duration
	// Timeout is MIGRATE's timeout; 0 means 10s.
	Timeout time.Duration
	// Replace makes a key that answered BUSYKEY move again with REPLACE:
	// the source's value overwrites the target's, as --cluster-replace
	// does. The key is recorded in Migration.Busy either way.
	Replace bool
}

// Migration moves one hash slot from its owner to another master the way
// `redis-cli --cluster reshard` does: [Cluster.StartMigration] marks the
// slot IMPORTING on the target and MIGRATING on the source, each
// [Migration.Step] moves one batch of keys (CLUSTER GETKEYSINSLOT, then
// MIGRATE ... KEYS), and [Migration.Finish] gives the slot to the target
// on every master (CLUSTER SETSLOT NODE: target first, then source, then
// the others). Its methods are not safe for concurrent use.
type Migration struct {
	Slot     int
	From, To string   // addresses of the source and the target
	Moved    int      // keys moved so far
	Batches  int      // MIGRATE calls made so far
	Busy     []string // keys that answered BUSYKEY

	c              *Cluster
	opts           MigrateOptions
	src, dst       *redis.Client
	srcID, dstID   string
	dstHost, dstPt string
}

// SlotOwner returns the address of the master that serves slot, as the
// first node of Addrs sees it (CLUSTER SHARDS).
func (c *Cluster) SlotOwner(ctx context.Context, slot int) (string, error) {
	n := redis.NewClient(&redis.Options{Addr: c.addrs[0]})
	defer n.Close()
	shards, err := n.ClusterShards(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("testredis: CLUSTER SHARDS: %w", err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, node := range sh.Nodes {
				if node.Role == "master" {
					return net.JoinHostPort(node.IP, strconv.FormatInt(node.Port, 10)), nil
				}
			}
		}
	}
	return "", fmt.Errorf("testredis: slot %d has no owner", slot)
}

// StartMigration opens the migration of slot: CLUSTER SETSLOT slot
// IMPORTING <source-id> on the target, then SETSLOT slot MIGRATING
// <target-id> on the source. From then on the source answers ASK for keys
// it no longer holds and TRYAGAIN for multi-key commands that find only
// some of theirs. Move the keys with Step and close with Finish.
func (c *Cluster) StartMigration(ctx context.Context, slot int, opts MigrateOptions) (*Migration, error) {
	if slot < 0 || slot >= 16384 {
		return nil, fmt.Errorf("testredis: slot %d out of range 0..16383", slot)
	}
	if opts.Batch <= 0 {
		opts.Batch = 10
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	from, err := c.SlotOwner(ctx, slot)
	if err != nil {
		return nil, err
	}
	to := opts.To
	if to == "" {
		for i, a := range c.addrs {
			if a == from {
				to = c.addrs[(i+1)%len(c.addrs)]
			}
		}
	}
	if to == from || !containsAddr(c.addrs, to) {
		return nil, fmt.Errorf("testredis: cannot move slot %d from %s to %q (masters %v)", slot, from, to, c.addrs)
	}
	m := &Migration{Slot: slot, From: from, To: to, c: c, opts: opts,
		src: redis.NewClient(&redis.Options{Addr: from}), dst: redis.NewClient(&redis.Options{Addr: to})}
	if m.dstHost, m.dstPt, err = net.SplitHostPort(to); err != nil {
		m.close()
		return nil, err
	}
	if m.srcID, err = m.src.Do(ctx, "CLUSTER", "MYID").Text(); err == nil {
		m.dstID, err = m.dst.Do(ctx, "CLUSTER", "MYID").Text()
	}
	if err == nil {
		err = m.dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", m.srcID).Err()
	}
	if err == nil {
		err = m.src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.dstID).Err()
	}
	if err != nil {
		m.close()
		return nil, fmt.Errorf("testredis: open migration of slot %d: %w", slot, err)
	}
	return m, nil
}

// Step moves the next batch of up to MigrateOptions.Batch keys of the slot
// from the source to the target. It reports done when the source holds no
// key of the slot any more. A BUSYKEY answer is retried key by key to learn
// which keys the target already held (recorded in Busy); those are moved
// with REPLACE when MigrateOptions.Replace, or else Step fails with
// ErrBusyKey and leaves them on the source.
func (m *Migration) Step(ctx context.Context) (done bool, err error) {
	keys, err := m.src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", m.Slot, m.opts.Batch).StringSlice()
	if err != nil {
		return false, fmt.Errorf("testredis: GETKEYSINSLOT %d: %w", m.Slot, err)
	}
	if len(keys) == 0 {
		return true, nil
	}
	err = m.migrate(ctx, keys, false)
	// MIGRATE moves the other keys of the batch and answers "ERR Target
	// instance replied with error: BUSYKEY ..." for the first busy one.
	if err != nil && strings.Contains(err.Error(), "BUSYKEY") {
		for _, k := range keys {
			n, xerr := m.src.Exists(ctx, k).Result()
			if xerr != nil || n == 0 {
				continue // moved with the batch, or gone: not busy
			}
			m.Busy = append(m.Busy, k)
			if !m.opts.Replace {
				return false, fmt.Errorf("slot %d key %q: %w", m.Slot, k, ErrBusyKey)
			}
			if err = m.migrate(ctx, []string{k}, true); err != nil {
				return false, fmt.Errorf("testredis: MIGRATE %q REPLACE: %w", k, err)
			}
		}
		err = nil
	}
	if err != nil {
		return false, fmt.Errorf("testredis: MIGRATE %d keys of slot %d: %w", len(keys), m.Slot, err)
	}
	m.Moved += len(keys)
	return false, nil
}

// Move moves the given keys of the slot from the source to the target in
// one MIGRATE (keys the source no longer holds are skipped by MIGRATE), so
// that a test can put the slot half-moved in a state of its choosing.
func (m *Migration) Move(ctx context.Context, keys ...string) error {
	if err := m.migrate(ctx, keys, false); err != nil {
		return fmt.Errorf("testredis: MIGRATE %d keys of slot %d: %w", len(keys), m.Slot, err)
	}
	m.Moved += len(keys)
	return nil
}

// migrate sends one MIGRATE host port "" 0 timeout [REPLACE] KEYS k...
func (m *Migration) migrate(ctx context.Context, keys []string, replace bool) error {
	args := []any{"MIGRATE", m.dstHost, m.dstPt, "", 0, m.opts.Timeout.Milliseconds()}
	if replace {
		args = append(args, "REPLACE")
	}
	args = append(args, "KEYS")
	for _, k := range keys {
		args = append(args, k)
	}
	m.Batches++
	err := m.src.Do(ctx, args...).Err()
	if err != nil && err.Error() == "NOKEY" {
		return nil // every key of the batch went away meanwhile
	}
	return err
}

// Finish gives the slot to the target: CLUSTER SETSLOT slot NODE
// <target-id> on the target, then on the source, then on every other
// master (the order the cluster specification recommends, so that no
// master redirects clients back to the source). It closes the
// migration's connections, whether it succeeds or not.
func (m *Migration) Finish(ctx context.Context) error {
	defer m.close()
	order := []string{m.To, m.From}
	for _, a := range m.c.addrs {
		if a != m.To && a != m.From {
			order = append(order, a)
		}
	}
	for _, a := range order {
		n := redis.NewClient(&redis.Options{Addr: a})
		err := n.Do(ctx, "CLUSTER", "SETSLOT", m.Slot, "NODE", m.dstID).Err()
		_ = n.Close()
		if err != nil {
			return fmt.Errorf("testredis: SETSLOT %d NODE on %s: %w", m.Slot, a, err)
		}
	}
	return nil
}

func (m *Migration) close() {
	_ = m.src.Close()
	_ = m.dst.Close()
}

// MigrateSlot moves slot to another master in one call: StartMigration,
// Step until done with opts.Pause between batches, Finish. The returned
// Migration says what moved (also on error, when it got that far). A step
// that fails leaves the slot half-moved, as redis-cli would.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, opts MigrateOptions) (*Migration, error) {
	m, err := c.StartMigration(ctx, slot, opts)
	if err != nil {
		return nil, err
	}
	for {
		done, err := m.Step(ctx)
		if err != nil {
			m.close()
			return m, err
		}
		if done {
			break
		}
		if opts.Pause > 0 {
			select {
			case <-ctx.Done():
				m.close()
				return m, ctx.Err()
			case <-time.After(opts.Pause): // pacing, so clients see the slot half-moved
			}
		}
	}
	return m, m.Finish(ctx)
}

func containsAddr(addrs []string, a string) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}
