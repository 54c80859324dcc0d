// Package a declares what the comments of good.go may name.
package a

import (
	"context"
	"time"

	redis "github.com/redis/go-redis/v9"
)

// Thing is a thing.
type Thing struct {
	Field int
	inner
}

type inner struct{ Deep int }

// Do does.
func (t *Thing) Do(ctx context.Context) {}

func helper() {}

var (
	_ = redis.Nil
	_ = time.Now
	_ = "local function push_pending() end"
)
