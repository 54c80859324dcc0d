package main

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// newClient returns a go-redis client of addr with the options every figure
// uses (--pool-size 0 keeps go-redis' default of 10 per GOMAXPROCS,
// --protocol 0 its default of RESP3).
func newClient(addr string, o options) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: o.poolSize, Protocol: o.protocol})
}

// serverCommands returns Redis's total_commands_processed: every command
// the server ran, from any client, Pub/Sub PINGs included.
func serverCommands(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO stats has no total_commands_processed")
}

// deleteKeys removes every key of namespace ns (keys start with "{ns:").
func deleteKeys(ctx context.Context, c *redis.Client, ns string) error {
	iter := c.Scan(ctx, 0, "{"+ns+":*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}
