// Package installed runs the product as the charts install it, on the test
// harness's API servers and as processes of this machine: helm and
// scripts/bootstrap-zone.sh in a shell whose admin kubeconfigs reach each API
// server through a version proxy (shell.go, proxy.go), the installed
// webhooks pointed at this machine (webhooks.go), and each chart pod run as
// its binary with the args and env of its container as helm installed its
// Deployment or DaemonSet and a kubeconfig holding a token of the pod's own
// ServiceAccount, nothing more (host.go). test/installdoc and the sandbox
// (test/sandbox) use it; it returns errors rather than failing a test, since
// the sandbox is a program.
package installed
