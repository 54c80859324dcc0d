package runtime

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// reach dials Redis once, as rdb would (its Options.Dialer: TLS, a
// Sentinel's current primary), sends a PING on that connection and reads
// one reply line. Any reply shows a Redis that serves (a NOAUTH too: the
// client's own connections authenticate), but LOADING: Redis restarted
// and is reading its data. A closed connection (a proxy or load balancer
// whose Redis is gone) or a refused one is an error, and so is a client
// whose connections reach can't make (a ClusterClient, a Ring): for those
// it returns nil, and the caller's PING through the client's pool decides.
func reach(ctx context.Context, rdb redis.UniversalClient) error {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	opt := c.Options()
	if opt.Dialer == nil {
		return nil
	}
	conn, err := opt.Dialer(ctx, opt.Network, opt.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("redis closed the connection: %w", err)
	}
	if strings.HasPrefix(line, "-LOADING") {
		return fmt.Errorf("redis is loading its data: %s", strings.TrimSpace(line[1:]))
	}
	return nil
}
