// Command producer is the smallest Overtake producer, the program whose
// binary size `make lint` prints and bounds (12 MB): a program that only
// enqueues links go-redis and the OpenTelemetry API, no exporter or gRPC.
package main

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
)

func main() {
	q, err := queue.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.Enqueue(context.Background(), queue.NewTask("email", nil)); err != nil {
		log.Fatal(err)
	}
}
