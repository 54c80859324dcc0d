package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
)

// What the runtime does with the go-redis client itself, beside the
// calls of internal/store: Start waits for it (awaitRedis), an error
// names its address (redisAddr), and RedisLogger routes its own log lines.

// ErrRedisUnreachable is wrapped by the error of Start (and so of Run)
// when Redis did not answer the worker's first heartbeat within
// Config.StartTimeout, or when Start's context ended before it did. The
// message names the address the client dials and the last failure.
var ErrRedisUnreachable = errors.New("overtake: redis unreachable")

// RedisLogger returns a logger for redis.SetLogger that writes go-redis's
// own lines (such as "connection pool: failed to dial after 5 attempts")
// to log at Warn, named "go-redis", instead of to stderr outside it. The
// runtime never sets go-redis's logger, a global of that package: a
// program does, once, in main:
//
//	redis.SetLogger(runtime.RedisLogger(logger))
func RedisLogger(log *zap.Logger) interface {
	Printf(ctx context.Context, format string, v ...any)
} {
	return redisLogger{log: log.Named("go-redis")}
}

// redisLogger is RedisLogger's value.
type redisLogger struct{ log *zap.Logger }

// Printf logs one line of go-redis at Warn.
func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(strings.TrimPrefix(strings.TrimSpace(fmt.Sprintf(format, v...)), "redis: "))
}

// redisAddr names what rdb dials, for an error: the address of a client,
// the seed addresses of a cluster or a ring, the primary a Sentinel
// client (redis.NewFailoverClient) finds, whose options keep neither the
// master name nor the sentinels' addresses.
func redisAddr(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		opt := c.Options()
		switch {
		case opt.Addr == "FailoverClient":
			return "the primary named by Sentinel (a redis.FailoverClient)"
		case opt.Network == "unix":
			return "unix:" + opt.Addr
		}
		return opt.Addr
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		return "ring " + strings.Join(slices.Sorted(maps.Values(c.Options().Addrs)), ",")
	}
	return fmt.Sprintf("%T", rdb)
}

// awaitRedis sends the worker's first heartbeat. With Config.StartTimeout
// negative it tries once and leaves the retries to the dispatcher's probe.
// Otherwise it tries again, on the dispatcher's backoff, until Redis
// answers or StartTimeout passes, and then fails with an error wrapping
// ErrRedisUnreachable; so it does if ctx ends first. Each try dials once
// (reach) before the heartbeat, so that a Redis that is away costs one
// connection attempt a try, not go-redis's DialerRetries. A heartbeat
// refused because the queue's shape is not this worker's (checked there
// when Redis was down at New) fails at once, whatever StartTimeout: a
// worker of another shape must not run.
func (r *Runtime) awaitRedis(ctx context.Context) error {
	if r.cfg.StartTimeout < 0 {
		if err := r.beats.beat(ctx); store.ShapeRefused(err) {
			return fmt.Errorf("overtake: start: %w", err)
		} else if err != nil {
			r.redis.failed(err) // the dispatcher probes before it leases
			r.log.Warn("first heartbeat failed; will retry", zap.Error(err))
		}
		return nil
	}
	begin := time.Now()
	wctx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer cancel()
	bo := backoff{limit: r.cfg.MaxRedisBackoff}
	addr := redisAddr(r.eng.Redis())
	for tries := 1; ; tries++ {
		err := reach(wctx, r.eng.Redis())
		if err == nil {
			if err = r.beats.beat(wctx); err == nil {
				return nil
			} else if store.ShapeRefused(err) {
				return fmt.Errorf("overtake: start: %w", err)
			}
		}
		if tries == 1 {
			r.log.Warn("redis does not answer; waiting for it", zap.String("redis", addr),
				zap.Duration("start_timeout", r.cfg.StartTimeout), zap.Error(err))
		}
		timer := time.NewTimer(bo.nextIn(time.Since(begin)))
		select {
		case <-wctx.Done():
			timer.Stop()
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %s did not answer before the start was cancelled (%w); last try: %w",
					ErrRedisUnreachable, addr, context.Cause(ctx), err)
			}
			return fmt.Errorf("%w: %s did not answer within Config.StartTimeout (%v): %w",
				ErrRedisUnreachable, addr, r.cfg.StartTimeout, err)
		case <-timer.C:
		}
	}
}
