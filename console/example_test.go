package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/queue"
)

// Mount the console under /console/ of a server of your own, read-only.
func Example() {
	m := miniredis.NewMiniRedis() // your Redis
	if err := m.Start(); err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	q, err := queue.New(rdb, queue.Config{Name: "jobs"})
	if err != nil {
		panic(err)
	}

	err = serve(q, func(url string) error {
		res, err := http.Get(url + "/console/")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		fmt.Println(res.Status)
		fmt.Println(strings.Contains(string(body), "<title>queue · jobs · overtake console</title>"))
		return nil
	})
	fmt.Println(err)
	// Output:
	// 200 OK
	// true
	// <nil>
}

// serve mounts the console of q on a server of its own, as the package
// doc shows, and calls visit with the server's URL.
func serve(q *queue.Client, visit func(url string) error) error {
	mux := http.NewServeMux()
	c, err := console.New(q, console.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	mux.Handle("/console/", http.StripPrefix("/console", c))

	srv := httptest.NewServer(mux)
	defer srv.Close()
	return visit(srv.URL)
}
