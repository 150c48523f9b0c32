// Package steadystate measures the product at rest at scale: 1,000 protected
// VMs in 100 groups over two zones (five clusters), with quorum-manager, each
// workload cluster's pg-controller and the agents of one node pair run as the
// real binaries, so that their memory and CPU are their own. Its benchmark
// prints each binary's RSS and idle CPU, the API requests each cluster served
// per idle minute, and the writes among them, which must be none: at rest
// nothing changes, so nothing may be written.
package steadystate
