package testredis

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// ACL is the rule a deployment gives Overtake's Redis user (README,
// "Security"): every command but the dangerous ones, only the keys and the
// wake-up channels of the namespace's queues. %s is the namespace.
const ACL = "on resetkeys ~{%s:*}:* resetchannels &{%s:*}:wake* -@all +@all -@dangerous"

// SecureServer is a redis-server that requires a password for an ACL user
// limited to one namespace, and also listens with TLS (certificates made
// by the test, for 127.0.0.1).
type SecureServer struct {
	*Server
	User, Password string
	TLSAddr        string
	CAFile         string      // PEM of the CA that signed the server's certificate
	TLS            *tls.Config // trusts that CA, for go-redis options
}

// StartSecure starts a SecureServer whose user may touch only namespace ns.
// It skips like StartServer where redis-server is missing.
func StartSecure(t testing.TB, ns string) *SecureServer {
	t.Helper()
	dir := t.TempDir()
	caPEM, certFile, keyFile := makeCerts(t, dir)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsPort, err := redisproc.FreePort(false)
	if err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, ServerOptions{Args: []string{"--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", caFile,
		"--tls-auth-clients", "no"}})
	s := &SecureServer{Server: srv, User: "overtake", Password: "s3cret-" + strconv.Itoa(tlsPort),
		TLSAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort)), CAFile: caFile}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	s.TLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	admin := srv.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := []any{"ACL", "SETUSER", s.User, ">" + s.Password}
	for _, f := range strings.Fields(fmt.Sprintf(ACL, ns, ns)) {
		args = append(args, f)
	}
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("testredis: ACL SETUSER: %v", err)
	}
	return s
}

// Client returns a go-redis client of the limited user, over TLS if tls.
func (s *SecureServer) Client(t testing.TB, overTLS bool) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: s.Addr(), Username: s.User, Password: s.Password}
	if overTLS {
		opt.Addr, opt.TLSConfig = s.TLSAddr, s.TLS
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// makeCerts writes a CA and a server certificate for 127.0.0.1 signed by
// it, and returns the CA's PEM and the server's cert and key files.
func makeCerts(t testing.TB, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "overtake test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	write := func(path, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certFile, "CERTIFICATE", leafDER)
	write(keyFile, "EC PRIVATE KEY", keyDER)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}
