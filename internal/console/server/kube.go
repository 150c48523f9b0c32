package server

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// anonymous returns base without any credential of the console's own: only
// the API server's address and the CA to trust. Every client the console
// builds starts from it and adds the user's token.
func anonymous(base *rest.Config) *rest.Config {
	return &rest.Config{
		Host:    base.Host,
		APIPath: base.APIPath,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: base.Insecure, ServerName: base.ServerName,
			CAFile: base.CAFile, CAData: base.CAData,
		},
		QPS: 50, Burst: 100,
		UserAgent: "siterecovery-console",
	}
}

// restMapper maps the few kinds the console uses without discovery, so that no
// request is made before the user's token is checked and none with another
// identity.
func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	sr := srv1alpha1.GroupVersion
	for kind, plural := range map[string]string{
		"ProtectionZone": "protectionzones", "ProtectionGroup": "protectiongroups",
		"ProtectionRequest": "protectionrequests", "FailoverRequest": "failoverrequests",
		"TestFailover": "testfailovers", "RPOEvent": "rpoevents",
		"ReplicationGroupStatus": "replicationgroupstatuses", "DRBDResource": "drbdresources",
	} {
		gvk := sr.WithKind(kind)
		m.AddSpecific(gvk, sr.WithResource(plural), sr.WithResource(kind), meta.RESTScopeNamespace)
	}
	// The report's failovers made through a DRPlacementControl.
	dr := drv1alpha1.GroupVersion
	m.AddSpecific(dr.WithKind("DRPlacementControl"), dr.WithResource("drplacementcontrols"), dr.WithResource("drplacementcontrol"), meta.RESTScopeNamespace)
	core := corev1.SchemeGroupVersion
	m.AddSpecific(core.WithKind("Namespace"), core.WithResource("namespaces"), core.WithResource("namespace"), meta.RESTScopeRoot)
	m.AddSpecific(core.WithKind("Node"), core.WithResource("nodes"), core.WithResource("node"), meta.RESTScopeRoot)
	m.AddSpecific(core.WithKind("Secret"), core.WithResource("secrets"), core.WithResource("secret"), meta.RESTScopeNamespace)
	vm := kubevirtv1.SchemeGroupVersion
	m.AddSpecific(vm.WithKind("VirtualMachine"), vm.WithResource("virtualmachines"), vm.WithResource("virtualmachine"), meta.RESTScopeNamespace)
	m.AddSpecific(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"),
		authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"),
		authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreview"), meta.RESTScopeRoot)
	m.AddSpecific(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
		authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"),
		authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreview"), meta.RESTScopeRoot)
	return m
}

// clients builds and caches one API client per session.
type clients struct {
	base   *rest.Config
	scheme *runtime.Scheme
	mapper meta.RESTMapper

	mu    sync.Mutex
	bySID map[string]sessionClient
}

// sessionClient is a session's client and the token it was built with: a
// refreshed token gets a new client.
type sessionClient struct {
	token  string
	client client.WithWatch
}

func newClients(base *rest.Config, s *runtime.Scheme) *clients {
	return &clients{base: anonymous(base), scheme: s, mapper: restMapper(), bySID: map[string]sessionClient{}}
}

// forToken returns a client that acts with token.
func (c *clients) forToken(token string) (client.WithWatch, error) {
	cfg := rest.CopyConfig(c.base)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: c.scheme, Mapper: c.mapper, HTTPClient: hc})
}

// forSession returns the cached client of a session.
func (c *clients) forSession(sid, token string) (client.WithWatch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.bySID[sid]; ok && sc.token == token {
		return sc.client, nil
	}
	cl, err := c.forToken(token)
	if err != nil {
		return nil, err
	}
	c.bySID[sid] = sessionClient{token: token, client: cl}
	return cl, nil
}

func (c *clients) forget(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.bySID, sid)
}

// apiError is what the console answers for a failed API call: the API
// server's code and message (a webhook's denial reads as its author wrote it).
type apiError struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

func toAPIError(err error) apiError {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := int(s.Code)
		if code == 0 {
			code = http.StatusBadGateway
		}
		return apiError{Code: code, Reason: string(s.Reason), Message: s.Message}
	}
	return apiError{Code: http.StatusBadGateway, Message: "the API server could not be reached"}
}
