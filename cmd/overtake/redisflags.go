package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	fs.StringVar(&f.namespace, "namespace", queue.Config{}.WithDefaults().Namespace, "key namespace of the queue")
	fs.StringVar(&f.queue, "queue", queue.Config{}.WithDefaults().Name, "queue name")
	fs.StringVar(&f.levels, "levels", strconv.Itoa(queue.Config{}.WithDefaults().Levels),
		"priority levels: a count (3 = low,normal,high) or level names lowest first (\"bulk,std,urgent,page\")")
	fs.StringVar(&f.classes, "classes", "", "priority classes for --class, as name=level pairs (\"free=low,paying=high\")")
	return f
}

// config builds the queue configuration the flags describe.
func (f *redisFlags) config() (queue.Config, error) {
	cfg := queue.Config{Namespace: f.namespace, Name: f.queue}
	if n, err := strconv.Atoi(f.levels); err == nil {
		if n < 1 || n > 64 {
			return cfg, usageErr("--levels %d: must be 1..64", n)
		}
		cfg.Levels = n
	} else {
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

// open connects to Redis, checks that it answers, and returns a queue
// client; close releases the connection.
func (f *redisFlags) open(ctx context.Context) (q *queue.Client, closeFn func(), err error) {
	cfg, err := f.config()
	if err != nil {
		return nil, nil, err
	}
	rdb, err := newRedisClient(f.url, os.Getenv(envRedisPassword))
	if err != nil {
		return nil, nil, err
	}
	if f.ca != "" {
		if err := trustCA(rdb, f.url, f.ca); err != nil {
			_ = rdb.Close()
			return nil, nil, err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("cannot reach Redis at %s: %v", maskURL(f.url), err)
	}
	if q, err = queue.New(rdb, cfg); err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	return q, func() { _ = rdb.Close() }, nil
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
