package runtime_test

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/runtime"
)

// go-redis writes its own lines (a dial that failed, a bad connection
// dropped) through a logger global to its package, to stderr by default.
// A worker's main routes them to its zap logger, once, before it makes a
// client.
func ExampleRedisLogger() {
	logger := zap.NewExample() // JSON lines on stdout, for this example
	redis.SetLogger(runtime.RedisLogger(logger))
	defer redis.SetLogger(runtime.RedisLogger(zap.NewNop()))

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1, DialerRetries: 1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("connection refused") // as if nothing listened
		}})
	defer func() { _ = rdb.Close() }()
	_ = rdb.Ping(context.Background()).Err()
	// Output:
	// {"level":"warn","logger":"go-redis","msg":"connection pool: failed to dial after 1 attempts: connection refused"}
}
