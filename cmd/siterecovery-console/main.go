// Command siterecovery-console serves the web console on the quorum cluster.
// It holds no privileged identity: users sign in with a bearer token the
// quorum API server accepts, or through the cluster's OIDC issuer, whose ID
// token the API server accepts, and every action is made with that token.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/siterecovery/siterecovery/internal/console/listen"
	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr, nil)
	stop()
	os.Exit(code)
}

// run serves the console until ctx ends. ready, when set, is told the
// address the console listens on once it accepts connections.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(net.Addr)) int {
	fs := flag.NewFlagSet("siterecovery-console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listenAddr := fs.String("listen", ":8443", "address to serve on")
	certFile := fs.String("tls-cert-file", "", "serving certificate (PEM); without it and without --behind-tls-proxy or --insecure-http the console serves HTTPS with a certificate it generates at start for --tls-san")
	keyFile := fs.String("tls-key-file", "", "key of --tls-cert-file")
	sans := fs.String("tls-san", "localhost,127.0.0.1", "comma-separated DNS names and IP addresses of the self-signed certificate (the console's Service names, the address users type)")
	behindProxy := fs.Bool("behind-tls-proxy", false, "serve plain HTTP to a proxy that terminates TLS in front of the console; the session cookie stays Secure")
	insecure := fs.Bool("insecure-http", false, "serve plain HTTP: sign-in tokens cross the network in clear text and the session cookie is not Secure (test clusters only)")
	trusted := fs.String("trusted-proxies", "", "comma-separated CIDRs of the proxies whose client-address header is believed (empty: none; the connection's address is the client)")
	addrHeader := fs.String("client-address-header", "X-Forwarded-For", "header a trusted proxy names the client in: X-Forwarded-For or Forwarded")
	maxStreams := fs.Int("max-streams-per-session", 4, "open live-update streams one session may hold (one per console tab); the next is refused")
	apiServer := fs.String("api-server", "", "URL of the quorum API server; empty uses the in-cluster address")
	caFile := fs.String("api-ca-file", "", "CA bundle of -api-server; empty uses the in-cluster CA")
	namespaces := fs.String("namespaces", "", "comma-separated DR namespaces shown to users who may not list ProtectionZones cluster-wide")
	idle := fs.Duration("idle-timeout", 30*time.Minute, "a session ends after this long without a request")
	absolute := fs.Duration("absolute-timeout", 8*time.Hour, "a session ends this long after sign-in")
	promURL := fs.String("prometheus-url", "", "Prometheus HTTP API root for each group's lag history; empty shows the samples the console took")
	promToken := fs.String("prometheus-token-file", "", "file holding the bearer token sent to -prometheus-url")
	promCA := fs.String("prometheus-ca-file", "", "CA bundle of -prometheus-url")
	oidcIssuer := fs.String("oidc-issuer-url", "", "OIDC issuer to offer sign-in with (the one the API server trusts); empty offers token sign-in only")
	oidcClient := fs.String("oidc-client-id", "", "the console's client id at -oidc-issuer-url (the API server's --oidc-client-id or an audience it accepts)")
	oidcSecret := fs.String("oidc-client-secret-file", "", "file holding the client secret; empty for a public client")
	oidcCA := fs.String("oidc-ca-file", "", "CA bundle of -oidc-issuer-url; empty trusts the system roots")
	oidcScopes := fs.String("oidc-scopes", "email,groups,offline_access", "comma-separated scopes asked for besides openid")
	oidcUser := fs.String("oidc-username-claim", "email", "claim the API server takes the user name from (its --oidc-username-claim)")
	oidcRedirect := fs.String("oidc-redirect-url", "", "callback URL registered at the issuer (https://console.example/api/oidc/callback); empty derives it from the request")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h printed the usage, as flag.ExitOnError does
		}
		return 2
	}

	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	// The API clients log through controller-runtime; give them the same sink.
	log.SetLogger(logr.FromSlogHandler(logger.Handler()))
	serving := listen.Config{CertFile: *certFile, KeyFile: *keyFile, BehindTLSProxy: *behindProxy, Insecure: *insecure, Names: split(*sans)}
	mode, err := serving.Mode()
	if err != nil {
		logger.Error("serving mode", "error", err)
		return 2
	}
	tlsConfig, err := serving.TLSConfig(mode, time.Now())
	if err != nil {
		logger.Error("TLS", "error", err)
		return 1
	}
	proxies, err := server.ParseTrustedProxies(split(*trusted))
	if err != nil {
		logger.Error("--trusted-proxies", "error", err)
		return 2
	}
	api, err := apiConfig(*apiServer, *caFile)
	if err != nil {
		logger.Error("quorum API server", "error", err)
		return 1
	}
	opts := server.Options{
		API: api, Scheme: scheme.New(), Namespaces: split(*namespaces), TLS: mode.BrowserTLS(),
		IdleTimeout: *idle, AbsoluteTimeout: *absolute, UI: ui.FS(), Log: logger,
		TrustedProxies: proxies, ClientAddressHeader: *addrHeader, MaxStreamsPerSession: *maxStreams,
	}
	if err := opts.ValidateClientAddressHeader(); err != nil {
		logger.Error("--client-address-header", "error", err)
		return 2
	}
	if *promURL != "" {
		opts.Prometheus = &server.PrometheusOptions{URL: *promURL, BearerTokenFile: *promToken, CAFile: *promCA}
	}
	if *oidcIssuer != "" {
		p, err := oidcProvider(*oidcIssuer, *oidcClient, *oidcSecret, *oidcCA, *oidcScopes, *oidcUser)
		if err != nil {
			logger.Error("OIDC", "error", err)
			return 1
		}
		opts.OIDC, opts.OIDCRedirectURL = p, *oidcRedirect
	}
	srv := server.New(opts)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go srv.Run(ctx)

	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", *listenAddr)
	if err != nil {
		logger.Error("listen", "error", err)
		return 1
	}
	hs := &http.Server{Handler: srv, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	announce(logger, mode, serving, l.Addr(), api.Host)
	if ready != nil {
		ready(l.Addr())
	}
	if mode.ServesTLS() {
		err = hs.ServeTLS(l, "", "")
	} else {
		err = hs.Serve(l)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "error", err)
		return 1
	}
	return 0
}

// announce logs how the console serves; plain HTTP end to end is a warning,
// since every sign-in then sends a bearer token in clear text.
func announce(logger *slog.Logger, mode listen.Mode, c listen.Config, addr net.Addr, apiHost string) {
	attrs := []any{"address", addr.String(), "mode", string(mode), "apiServer", apiHost}
	switch mode {
	case listen.InsecureHTTP:
		logger.Warn("serving plain HTTP (--insecure-http): sign-in tokens cross the network in clear text and the session cookie is not Secure; use it on a test cluster only", attrs...)
	case listen.SelfSigned:
		logger.Info("serving HTTPS with a self-signed certificate generated at start; browsers warn about it until you give --tls-cert-file",
			append(attrs, "names", strings.Join(c.Names, ","))...)
	default:
		logger.Info("serving", attrs...)
	}
}

// apiConfig is the API server's address and CA, without the pod's own token:
// the console never acts as its service account.
func apiConfig(host, caFile string) (*rest.Config, error) {
	if host == "" {
		in, err := rest.InClusterConfig()
		if err != nil {
			return nil, err
		}
		return &rest.Config{Host: in.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: in.CAFile, CAData: in.CAData}}, nil
	}
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}, nil
}

// oidcProvider configures sign-in with the issuer; the secret is read from a
// file so that it never appears in the process's arguments.
func oidcProvider(issuer, clientID, secretFile, caFile, scopes, usernameClaim string) (*oidc.Provider, error) {
	var secret string
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return nil, fmt.Errorf("client secret: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	return oidc.New(oidc.Config{IssuerURL: issuer, ClientID: clientID, ClientSecret: secret, CAFile: caFile,
		Scopes: split(scopes), UsernameClaim: usernameClaim})
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
