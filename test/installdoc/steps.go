package installdoc

import (
	"bufio"
	"os"
	"regexp"
	"strings"
)

// stepHeading matches a numbered step's heading: "## 3. Workload clusters".
var stepHeading = regexp.MustCompile(`^## (\d+)\. `)

// steps returns the shell code blocks of each numbered step of an install
// page, by step number, in page order.
func steps(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	step, inBlock := "", false
	var block strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !inBlock && strings.HasPrefix(line, "## "):
			step = ""
			if m := stepHeading.FindStringSubmatch(line); m != nil {
				step = m[1]
			}
		case !inBlock && line == "```sh":
			inBlock = true
			block.Reset()
		case inBlock && line == "```":
			inBlock = false
			if step != "" {
				out[step] = append(out[step], block.String())
			}
		case inBlock:
			block.WriteString(line + "\n")
		}
	}
	return out, sc.Err()
}
