// Command siterecovery-probe is the network check a test failover's probe Job
// runs in the target cluster: it exits 0 when the test VM answers through its
// Service, 1 when it does not (the reason on stderr), and 2 on bad flags.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/siterecovery/siterecovery/internal/netprobe"
)

func main() {
	tcp := flag.String("tcp", "", "host:port to connect to")
	url := flag.String("http", "", "URL to GET; 2xx and 3xx answers pass")
	timeout := flag.Duration("timeout", 60*time.Second, "how long the check may take")
	flag.Parse()
	kind, target := "tcp", *tcp
	if *url != "" {
		kind, target = "http", *url
	}
	if (*tcp == "") == (*url == "") || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "siterecovery-probe: give exactly one of -tcp host:port or -http URL")
		os.Exit(2)
	}
	if err := netprobe.Run(kind, target, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "siterecovery-probe:", err)
		os.Exit(1)
	}
	fmt.Printf("siterecovery-probe: %s %s answered\n", kind, target)
}
