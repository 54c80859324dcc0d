package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overtake/overtake/queue"
	"github.com/redis/go-redis/v9"
)

// Environment variables the connection flags default to.
const (
	envRedisURL      = "REDIS_URL"
	envRedisPassword = "REDIS_PASSWORD"
	envRedisCA       = "REDIS_CA"
	envNamespace     = "OVERTAKE_NAMESPACE"
	envQueue         = "OVERTAKE_QUEUE"
	defaultRedisURL  = "redis://127.0.0.1:6379"
)

// redisFlags are the connection and queue flags shared by every command
// that talks to an existing Redis.
type redisFlags struct {
	url       string
	namespace string
	queue     string
	levels    string
	classes   string
	ca        string
	// create: a queue Redis holds neither a shape nor data of is created
	// with the flags' shape (the default one without --levels), as a
	// producer's queue.New does (enqueue); else it is an error (open).
	create bool
}

func addRedisFlags(fs *flag.FlagSet) *redisFlags {
	f := &redisFlags{}
	def := os.Getenv(envRedisURL)
	if def == "" {
		def = defaultRedisURL
	}
	fs.StringVar(&f.url, "redis", def, "Redis URL (redis:// or rediss://, user:password@ optional; "+
		"comma-separated host:port list for a cluster); defaults to $"+envRedisURL+
		", password also from $"+envRedisPassword)
	fs.Lookup("redis").DefValue = maskURL(def) // -h must not show a password
	fs.StringVar(&f.ca, "redis-ca", os.Getenv(envRedisCA), "PEM file of the CA that signed a rediss:// server's "+
		"certificate, when it is not one the system trusts; defaults to $"+envRedisCA)
	fs.StringVar(&f.namespace, "namespace", envOr(envNamespace, queue.Config{}.WithDefaults().Namespace),
		"key namespace of the queue; defaults to $"+envNamespace)
	fs.StringVar(&f.queue, "queue", envOr(envQueue, queue.Config{}.WithDefaults().Name), "queue name; defaults to $"+envQueue)
	fs.StringVar(&f.levels, "levels", "", "deprecated: the levels are read from Redis. Given, a count (3 = low,normal,high) "+
		"or level names lowest first (\"bulk,std,urgent,page\") that must match them, or that record the shape of a queue "+
		"in use that Redis has no shape of (opened only by older versions)")
	fs.StringVar(&f.classes, "classes", "", "deprecated: the classes are read from Redis. Given, name=level pairs "+
		"(\"free=low,paying=high\") that must not map a class elsewhere; recorded with --levels or by enqueue")
	return f
}

// config builds the queue configuration the flags describe, without the
// shape Redis holds (see open): it checks the flags before connecting.
func (f *redisFlags) config() (queue.Config, error) {
	return f.withShapeFlags(queue.Config{Namespace: f.namespace, Name: f.queue})
}

// withShapeFlags returns cfg with the levels of --levels and the classes
// of --classes, where given; the classes name levels of the result.
func (f *redisFlags) withShapeFlags(cfg queue.Config) (queue.Config, error) {
	switch n, err := strconv.Atoi(f.levels); {
	case f.levels == "":
	case err == nil:
		if n < 1 || n > 64 {
			return cfg, usageErr("--levels %d: must be 1..64", n)
		}
		cfg.Levels, cfg.LevelNames = n, nil
	default:
		cfg.LevelNames = nil
		for _, name := range strings.Split(f.levels, ",") {
			if name = strings.TrimSpace(name); name == "" {
				return cfg, usageErr("--levels %q: empty level name", f.levels)
			}
			if slices.Contains(cfg.LevelNames, name) {
				return cfg, usageErr("--levels %q: level name %q given twice", f.levels, name)
			}
			cfg.LevelNames = append(cfg.LevelNames, name)
		}
		cfg.Levels = len(cfg.LevelNames)
	}
	if f.classes == "" {
		return cfg, nil
	}
	cfg.Classes = map[string]int{}
	for _, pair := range strings.Split(f.classes, ",") {
		name, lvl, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" {
			return cfg, usageErr("--classes: %q is not name=level", pair)
		}
		l, err := levelOf(cfg, lvl)
		if err != nil {
			return cfg, usageErr("--classes %s: %v", name, err)
		}
		cfg.Classes[name] = l
	}
	return cfg, nil
}

// levelOf resolves a level name or number of cfg without a connection.
func levelOf(cfg queue.Config, name string) (int, error) {
	cfg = cfg.WithDefaults()
	for i, n := range cfg.LevelNames {
		if n == name {
			return i, nil
		}
	}
	if l, err := strconv.Atoi(name); err == nil && l >= 0 && l < cfg.Levels {
		return l, nil
	}
	return 0, fmt.Errorf("no level %q (have %s)", name, strings.Join(cfg.LevelNames, ","))
}

// open connects to Redis, checks that it answers, and returns a client of
// the queue the flags name, with the shape (levels, names, classes) the
// queue holds in Redis; close releases the connection. --levels and
// --classes, where given, replace the stored ones, so that queue.New fails
// naming both shapes when they differ. A queue Redis holds no shape of is
// an error that names the queues of the namespace, unless f.create and
// the queue holds no data (enqueue's quick start), or it holds data and
// --levels gives its levels (see queueConfig).
func (f *redisFlags) open(ctx context.Context) (q *queue.Client, closeFn func(), err error) {
	if _, err := f.config(); err != nil {
		return nil, nil, err
	}
	rdb, err := f.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := f.queueConfig(ctx, rdb)
	if err == nil {
		q, err = queue.New(rdb, cfg)
	}
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	return q, func() { _ = rdb.Close() }, nil
}

// queueConfig returns the config of the flags' queue with the shape Redis
// holds, overridden by --levels and --classes (see open).
func (f *redisFlags) queueConfig(ctx context.Context, rdb redis.UniversalClient) (queue.Config, error) {
	cfg := queue.Config{Namespace: f.namespace, Name: f.queue}
	sh, err := queue.ReadShape(ctx, rdb, f.namespace, f.queue)
	switch {
	case err == nil:
		cfg = sh.Apply(cfg)
	case !errors.Is(err, queue.ErrNoQueue):
		return cfg, err
	default:
		// No shape: record one only for a name never used, by enqueue (a
		// quick start, as a producer's queue.New), or for a queue in use
		// (opened by a version recording no shapes) whose levels --levels
		// gives: guessing them would break its workers, and a mistyped
		// --queue would leave a phantom queue.
		used, err := queue.InUse(ctx, rdb, f.namespace, f.queue)
		switch {
		case err != nil:
			return cfg, err
		case used && f.levels == "":
			return cfg, fmt.Errorf("%w: %q in namespace %q holds tasks but no recorded shape (opened only by an "+
				"Overtake recording no shapes); give its levels with --levels to record them", errNoQueue, f.queue, f.namespace)
		case !used && !f.create:
			return cfg, f.noQueue(ctx, rdb)
		}
	}
	return f.withShapeFlags(cfg)
}

// noQueue is the error of a queue that Redis holds no shape of: it names
// the queues of the namespace that it does hold.
func (f *redisFlags) noQueue(ctx context.Context, rdb redis.UniversalClient) error {
	names, err := queue.Queues(ctx, rdb, f.namespace)
	if err != nil {
		return err
	}
	found := "it has no queue"
	if len(names) > 0 {
		found = "its queues: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%w: %q in namespace %q (%s); a queue is recorded when a producer or worker "+
		"first opens it (--levels opens one that only an Overtake recording no shapes opened)", errNoQueue, f.queue, f.namespace, found)
}

// errNoQueue: the flags name a queue that Redis holds no shape of.
var errNoQueue = errors.New("no such queue")

// connect connects to Redis and checks that it answers.
func (f *redisFlags) connect(ctx context.Context) (redis.UniversalClient, error) {
	rdb, err := newRedisClient(f.url, os.Getenv(envRedisPassword))
	if err != nil {
		return nil, err
	}
	if f.ca != "" {
		if err := trustCA(rdb, f.url, f.ca); err != nil {
			_ = rdb.Close()
			return nil, err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %v", maskURL(f.url), err)
	}
	return rdb, nil
}

// newRedisClient parses raw: one redis://, rediss:// or unix:// URL (or a
// bare host:port), or a comma-separated list of cluster nodes whose first
// entry carries the credentials and TLS ("rediss://:pw@h1:7000,h2:7001").
// password fills in when the URL has none. Errors never contain the
// password.
func newRedisClient(raw, password string) (redis.UniversalClient, error) {
	parts := strings.Split(strings.TrimSpace(raw), ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, usageErr("--redis %q: empty address", maskURL(raw))
		}
		if !strings.Contains(p, "://") {
			p = "redis://" + p
		}
		parts[i] = p
	}
	addSecret(password)
	if u, err := url.Parse(parts[0]); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			addSecret(pw)
		}
	}
	opt, err := redis.ParseURL(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: --redis %s: %s", errUsage, maskURL(parts[0]), mask(err.Error()))
	}
	if opt.Password == "" && password != "" {
		opt.Password = password
	}
	if len(parts) == 1 {
		return redis.NewClient(opt), nil
	}
	addrs := []string{opt.Addr}
	for _, p := range parts[1:] {
		o, err := redis.ParseURL(p)
		if err != nil {
			return nil, fmt.Errorf("%w: --redis %s: %s", errUsage, maskURL(p), mask(err.Error()))
		}
		addrs = append(addrs, o.Addr)
	}
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: addrs, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout,
	}), nil
}

// trustCA makes rdb's TLS connections trust the CA in file (PEM).
func trustCA(rdb redis.UniversalClient, raw, file string) error {
	pemData, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: --redis-ca: %v", errUsage, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return fmt.Errorf("%w: --redis-ca %s: no PEM certificate in it", errUsage, file)
	}
	var tc *tls.Config
	switch c := rdb.(type) {
	case *redis.Client:
		tc = c.Options().TLSConfig
	case *redis.ClusterClient:
		tc = c.Options().TLSConfig
	}
	if tc == nil {
		return fmt.Errorf("%w: --redis-ca needs a rediss:// URL, got %s", errUsage, maskURL(raw))
	}
	tc.RootCAs = pool
	return nil
}

// secrets are passwords seen in flags or the environment; mask removes
// them from every message the command prints.
var secrets struct {
	sync.Mutex
	list []string
}

func addSecret(s string) {
	if s == "" {
		return
	}
	secrets.Lock()
	defer secrets.Unlock()
	secrets.list = append(secrets.list, s, url.QueryEscape(s), url.PathEscape(s))
}

// userinfo matches the password part of scheme://user:password@ in text.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^\s/"',]*@`)

// maskURL returns raw with the password of each URL replaced by "****".
func maskURL(raw string) string { return mask(raw) }

// mask replaces URL passwords and every known secret in s with "****".
func mask(s string) string {
	s = userinfo.ReplaceAllString(s, "${1}****@")
	secrets.Lock()
	defer secrets.Unlock()
	for _, sec := range secrets.list {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "****")
		}
	}
	return s
}
