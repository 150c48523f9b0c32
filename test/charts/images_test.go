package charts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/siterecovery/siterecovery/test/chartrender"
)

// TestImagesPinByTagAndDigest checks that every image renders as
// repository:tag, with the chart's appVersion as the default tag, and with
// @digest appended when one is set (what make images prints).
func TestImagesPinByTagAndDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	img := map[string]any{"digest": digest}
	for chart, values := range map[string]map[string]any{
		"quorum-control-plane":   {"image": img, "console": map[string]any{"image": img}},
		"workload-control-plane": {"pgController": map[string]any{"image": img}, "drbdNodeAgent": map[string]any{"image": img}},
	} {
		for _, pinned := range []bool{false, true} {
			var v map[string]any
			if pinned {
				v = values
			}
			objs, err := chartrender.RenderValues(chart, "dr-production", v)
			require.NoError(t, err)
			meta, err := chartrender.RunHelm(nil, "show", "chart", chartPath(chart))
			require.NoError(t, err)
			var chartYAML struct{ AppVersion string }
			require.NoError(t, yaml.Unmarshal([]byte(meta), &chartYAML))
			require.NotEmpty(t, chartYAML.AppVersion, "%s: Chart.yaml's appVersion", chart)
			tag := ":" + chartYAML.AppVersion
			n := 0
			for _, o := range objs {
				if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
					continue
				}
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				for _, c := range containers {
					image := c.(map[string]any)["image"].(string)
					n++
					require.True(t, strings.HasPrefix(image, "ghcr.io/siterecovery/"), image)
					ref, gotDigest, hasDigest := strings.Cut(image, "@")
					require.True(t, strings.HasSuffix(ref, tag), "%s: the appVersion tag", image)
					require.Equal(t, pinned, hasDigest, image)
					if pinned {
						require.Equal(t, digest, gotDigest)
					}
				}
			}
			require.Equal(t, 2, n, "%s renders two images", chart)
		}
	}
}
