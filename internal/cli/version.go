package cli

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// version and commit are set at release builds:
// -ldflags "-X github.com/siterecovery/siterecovery/internal/cli.version=v0.1.0
// -X github.com/siterecovery/siterecovery/internal/cli.commit=<sha>"
// (make krew-manifest does). Otherwise they come from the Go build info.
var (
	version = ""
	commit  = ""
)

// Labels the quorum-control-plane chart puts on quorum-manager's Deployment
// (its _helpers.tpl qcp.labels): the name selects it, the version is the
// chart's appVersion, the tag its image defaults to. Its container is
// "manager" (templates/deployment.yaml).
const (
	managerNameLabel    = "app.kubernetes.io/name"
	managerName         = "quorum-manager"
	managerVersionLabel = "app.kubernetes.io/version"
	managerContainer    = "manager"
)

// VersionReport is what version prints: this CLI's build, and the product
// installed in the DR namespace of the quorum cluster.
type VersionReport struct {
	metav1.TypeMeta `json:",inline"`
	ClientVersion   ClientVersion  `json:"clientVersion"`
	ServerVersion   *ServerVersion `json:"serverVersion,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (r *VersionReport) DeepCopyObject() runtime.Object { return deepCopyJSON(r) }

// ClientVersion is the CLI's build.
type ClientVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// ServerVersion is the product on the quorum cluster: each quorum-manager
// Deployment of the DR namespace, and the cluster's Kubernetes version.
type ServerVersion struct {
	Namespace         string           `json:"namespace"`
	QuorumManagers    []ManagerVersion `json:"quorumManagers"`
	KubernetesVersion string           `json:"kubernetesVersion,omitempty"`
}

// ManagerVersion is one quorum-manager Deployment.
type ManagerVersion struct {
	Deployment string `json:"deployment"`
	// Version is the Deployment's app.kubernetes.io/version label.
	Version       string `json:"version"`
	Image         string `json:"image,omitempty"`
	Replicas      int32  `json:"replicas"`
	ReadyReplicas int32  `json:"readyReplicas"`
}

func newVersionCommand(o *Options) *cobra.Command {
	pf := newPrintFlags(false).forReport()
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version and the version of siterecovery on the quorum cluster",
		Long: `version prints this CLI's version, and for the DR namespace (-n, else the
kubeconfig context's) the version of each quorum-manager Deployment there (its
app.kubernetes.io/version label, which the quorum-control-plane chart sets to
its appVersion, and its image) with the quorum cluster's Kubernetes version.
It needs get on deployments in that namespace; --client prints only the CLI's.`,
		Example: `  kubectl siterecovery version -n dr-production
  kubectl siterecovery version --client -o json`,
		Args:    exactArgs(0),
		PreRunE: func(*cobra.Command, []string) error { return pf.checkReport() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := &VersionReport{TypeMeta: reportMeta("Version"), ClientVersion: clientVersion()}
			var serverErr error
			if !clientOnly {
				r.ServerVersion, serverErr = o.serverVersion(cmd.Context())
			}
			if pf.human() {
				r.print(o.Out)
			} else if err := pf.printObj(r, o.Out); err != nil {
				return err
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print only the CLI's version; read nothing from the cluster")
	pf.addFlags(cmd)
	return cmd
}

// clientVersion is the build's version: the -ldflags values, else the
// module version and VCS stamp of the Go build info.
func clientVersion() ClientVersion {
	v := ClientVersion{Version: version, Commit: commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.GoVersion = bi.GoVersion
		if v.Version == "" && bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		modified := false
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit == "" {
			v.Commit += "-dirty"
		}
		v.Platform = goos + "/" + goarch
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

// serverVersion reads the quorum-manager Deployments of the DR namespace.
func (o *Options) serverVersion(ctx context.Context) (*ServerVersion, error) {
	c, err := o.Quorum()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{managerNameLabel: managerName}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("the version of siterecovery in DR namespace %s is the label %s of its quorum-manager Deployment, which you may not list there: %w", ns, managerVersionLabel, err)
		}
		return nil, err
	}
	sv := &ServerVersion{Namespace: ns, KubernetesVersion: o.kubernetesVersion()}
	for _, d := range list.Items {
		// The release's other Deployments (the console) carry the chart's
		// labels too; quorum-manager's is the one running the manager.
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ctr.Name != managerContainer {
				continue
			}
			mv := ManagerVersion{Deployment: d.Name, Version: d.Labels[managerVersionLabel], Image: ctr.Image, ReadyReplicas: d.Status.ReadyReplicas, Replicas: 1}
			if d.Spec.Replicas != nil {
				mv.Replicas = *d.Spec.Replicas
			}
			sv.QuorumManagers = append(sv.QuorumManagers, mv)
		}
	}
	if len(sv.QuorumManagers) == 0 {
		return nil, fmt.Errorf("no quorum-manager Deployment (label %s=%s, container %s) in DR namespace %s: is the quorum-control-plane chart installed there? (use -n to pick the DR namespace)", managerNameLabel, managerName, managerContainer, ns)
	}
	return sv, nil
}

// kubernetesVersion is the quorum cluster's version, or "" when discovery
// does not answer (the Deployment read already did).
func (o *Options) kubernetesVersion() string {
	dc, err := o.Flags.ToDiscoveryClient()
	if err != nil {
		return ""
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return ""
	}
	return info.GitVersion
}

func (r *VersionReport) print(w io.Writer) {
	cv := r.ClientVersion
	var details []string
	if cv.Commit != "" {
		details = append(details, "commit "+cv.Commit)
	}
	details = append(details, cv.GoVersion, cv.Platform)
	fmt.Fprintf(w, "Client Version: %s (%s)\n", cv.Version, strings.Join(details, ", "))
	if sv := r.ServerVersion; sv != nil {
		for _, m := range sv.QuorumManagers {
			fmt.Fprintf(w, "Server Version: %s (Deployment %s/%s, image %s, %d/%d ready)\n", m.Version, sv.Namespace, m.Deployment, m.Image, m.ReadyReplicas, m.Replicas)
		}
		if sv.KubernetesVersion != "" {
			fmt.Fprintf(w, "Quorum cluster Kubernetes Version: %s\n", sv.KubernetesVersion)
		}
	}
}
