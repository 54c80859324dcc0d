package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/redis/go-redis/v9"
)

// newMux registers the handlers of tc.
func newMux(tc *Transcoder) *handlers.Mux {
	mux := handlers.NewMux()
	handlers.HandleJSON(mux, TypeTranscode, tc.Transcode)
	mux.HandleFunc(TypeThumbnail, tc.Thumbnail)
	return mux
}

func main() {
	if err := runMain(); err != nil {
		log.Fatal(err)
	}
}

// runMain is main with an error, so that its deferred calls run before
// the process exits.
func runMain() error {
	opt, err := redis.ParseURL(cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"))
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	q, err := queue.New(rdb, queue.Config{Name: "media"})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(os.Args) == 3 { // producer mode
		var t *queue.TaskInfo
		switch video := os.Args[2]; os.Args[1] {
		case "cancel": // video is the task's ID
			if err := q.Cancel(ctx, video); err != nil {
				return err
			}
			fmt.Printf("canceled %s (a running transcode stops at once and saves nothing)\n", video)
			return nil
		case TypeTranscode:
			payload, _ := json.Marshal(TranscodeArgs{Video: video, Segments: 20})
			t, err = q.Enqueue(ctx, queue.NewTask(TypeTranscode, payload), queue.LevelNamed("low"))
		case TypeThumbnail:
			t, err = q.Enqueue(ctx, queue.NewTask(TypeThumbnail, []byte(video)), queue.LevelNamed("high"))
		default:
			return fmt.Errorf("usage: %s [transcode|thumbnail VIDEO | cancel TASK_ID]", os.Args[0])
		}
		if err != nil {
			return err
		}
		fmt.Printf("enqueued %s %s at level %s\n", t.Type, t.ID, q.LevelName(t.Level))
		return nil
	}

	tc := &Transcoder{SegmentTime: 500 * time.Millisecond, CheckpointEvery: 2 * time.Second, Out: os.Stdout}
	rt, err := runtime.New(q, newMux(tc), runtime.Config{Concurrency: 1})
	if err != nil {
		return err
	}
	log.Printf("transcode worker %s: one slot, Ctrl-C to stop", rt.WorkerID())
	if err := rt.Run(ctx); err != nil {
		return err
	}
	return nil
}
