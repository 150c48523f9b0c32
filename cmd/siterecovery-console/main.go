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
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func main() { os.Exit(run()) }

func run() int {
	listen := flag.String("listen", ":8443", "address to serve on")
	certFile := flag.String("tls-cert-file", "", "serving certificate (PEM); without it the console serves plain HTTP and must sit behind a TLS-terminating proxy")
	keyFile := flag.String("tls-key-file", "", "key of -tls-cert-file")
	behindProxy := flag.Bool("behind-tls-proxy", false, "a proxy terminates TLS in front of this plain-HTTP console: mark the session cookie Secure")
	apiServer := flag.String("api-server", "", "URL of the quorum API server; empty uses the in-cluster address")
	caFile := flag.String("api-ca-file", "", "CA bundle of -api-server; empty uses the in-cluster CA")
	namespaces := flag.String("namespaces", "", "comma-separated DR namespaces shown to users who may not list ProtectionZones cluster-wide")
	idle := flag.Duration("idle-timeout", 30*time.Minute, "a session ends after this long without a request")
	absolute := flag.Duration("absolute-timeout", 8*time.Hour, "a session ends this long after sign-in")
	promURL := flag.String("prometheus-url", "", "Prometheus HTTP API root for each group's lag history; empty shows the samples the console took")
	promToken := flag.String("prometheus-token-file", "", "file holding the bearer token sent to -prometheus-url")
	promCA := flag.String("prometheus-ca-file", "", "CA bundle of -prometheus-url")
	oidcIssuer := flag.String("oidc-issuer-url", "", "OIDC issuer to offer sign-in with (the one the API server trusts); empty offers token sign-in only")
	oidcClient := flag.String("oidc-client-id", "", "the console's client id at -oidc-issuer-url (the API server's --oidc-client-id or an audience it accepts)")
	oidcSecret := flag.String("oidc-client-secret-file", "", "file holding the client secret; empty for a public client")
	oidcCA := flag.String("oidc-ca-file", "", "CA bundle of -oidc-issuer-url; empty trusts the system roots")
	oidcScopes := flag.String("oidc-scopes", "email,groups,offline_access", "comma-separated scopes asked for besides openid")
	oidcUser := flag.String("oidc-username-claim", "email", "claim the API server takes the user name from (its --oidc-username-claim)")
	oidcRedirect := flag.String("oidc-redirect-url", "", "callback URL registered at the issuer (https://console.example/api/oidc/callback); empty derives it from the request")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// The API clients log through controller-runtime; give them the same sink.
	log.SetLogger(logr.FromSlogHandler(logger.Handler()))
	api, err := apiConfig(*apiServer, *caFile)
	if err != nil {
		logger.Error("quorum API server", "error", err)
		return 1
	}
	tls := *certFile != "" || *behindProxy
	opts := server.Options{
		API: api, Scheme: scheme.New(), Namespaces: split(*namespaces), TLS: tls,
		IdleTimeout: *idle, AbsoluteTimeout: *absolute, UI: ui.FS(), Log: logger,
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go srv.Run(ctx)

	hs := &http.Server{Addr: *listen, Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	logger.Info("serving", "address", *listen, "tls", tls, "apiServer", api.Host)
	if *certFile != "" {
		err = hs.ListenAndServeTLS(*certFile, *keyFile)
	} else {
		err = hs.ListenAndServe()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "error", err)
		return 1
	}
	return 0
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
