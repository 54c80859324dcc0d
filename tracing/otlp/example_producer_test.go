package otlp_test

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/tracing/otlp"
)

// produce is the package doc's producer: it exports its enqueue spans
// over OTLP/gRPC to a collector on 127.0.0.1:4317.
func produce(ctx, shutdownCtx context.Context, rdb redis.UniversalClient) error {
	p, err := otlp.Setup(ctx,
		otlp.WithServiceName("billing-worker"),
		otlp.WithProtocol(otlp.ProtocolGRPC),
		otlp.WithEndpoint("127.0.0.1:4317"), otlp.WithInsecure())
	if err != nil {
		return err
	}
	defer func() { _ = p.Shutdown(shutdownCtx) }() // flushes spans and metrics
	q, err := queue.New(rdb, queue.Config{TracerProvider: p.TracerProvider})
	if err != nil {
		return err
	}
	_, err = q.Enqueue(ctx, queue.NewTask("invoice", nil))
	return err
}

// A producer that traces its enqueues: compiled, not run, as it needs a
// collector and a Redis.
func Example_producer() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	_ = produce(context.Background(), context.Background(), rdb)
}
