package store

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scanCount is the COUNT hint of each SCAN call of Queues.
const scanCount = 1000

// Queues returns the names of the queues of namespace ns that have a
// stored shape, sorted. It SCANs for their shape keys: on a Cluster every
// master, as go-redis's ClusterClient does not route SCAN. A SCAN walks
// every key of the database (scanCount per call), so on a large database
// it takes one round trip per scanCount keys; it is meant for operators'
// tools, not for a hot path.
func Queues(ctx context.Context, rdb redis.UniversalClient, ns string) ([]string, error) {
	prefix := "{" + escapeName(ns) + ":"
	pattern := globEscape(prefix) + "*}:" + shapeSuffix
	var (
		mu    sync.Mutex
		names []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, scanCount).Iterator()
		for it.Next(ctx) {
			name, ok := strings.CutPrefix(it.Val(), prefix)
			if !ok {
				continue
			}
			name, ok = strings.CutSuffix(name, "}:"+shapeSuffix)
			// An escaped name holds no ':' or '}': a longer match is another
			// key (a task ID ending in "}:shape").
			if !ok || strings.ContainsAny(name, ":}") {
				continue
			}
			mu.Lock()
			names = append(names, unescapeName(name))
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		return nil, wrapf(err, "list queues of namespace %q", ns)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

// nameUnescaper undoes nameEscaper.
var nameUnescaper = strings.NewReplacer("%25", "%", "%3A", ":", "%7B", "{", "%7D", "}")

func unescapeName(s string) string { return nameUnescaper.Replace(s) }

// QueueHasData reports whether queue name of namespace ns holds data of a
// queue in use: its version key (written by a worker's heartbeat), counts,
// workers, leases, scheduled, done or dead tasks, pause state or a
// pending list of any level Levels allows. One EXISTS, so a queue opened
// by a version of Overtake that recorded no shape is told from a name
// never used (the CLI records a shape only for the latter, unless told
// the levels).
func QueueHasData(ctx context.Context, rdb redis.UniversalClient, ns, name string) (bool, error) {
	k := newKeys(ns, name)
	ks := []string{k.version(), k.counts(), k.alive(), k.leases(), k.scheduled(), k.done(), k.dead(), k.paused()}
	for l := range maxLevels {
		ks = append(ks, k.pending(l))
	}
	n, err := rdb.Exists(ctx, ks...).Result()
	if err != nil {
		return false, wrapf(err, "data of queue %q", name)
	}
	return n > 0, nil
}
