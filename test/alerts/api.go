package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Alert is an alert of Prometheus's /api/v1/alerts.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is pending or firing.
	State string `json:"state"`
	Value string `json:"value"`
}

// Alerts returns the pending and firing alerts.
func (a API) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	err := a.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// Series is one element of an instant query's result.
type Series struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// Query evaluates expr now and returns its series (a scalar result is one
// series without labels).
func (a API) Query(ctx context.Context, expr string) ([]Series, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := a.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType == "scalar" || data.ResultType == "string" {
		var v []any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		return []Series{{Value: v}}, nil
	}
	var out []Series
	err := json.Unmarshal(data.Result, &out)
	return out, err
}

// TargetHealth is a scrape target's health in /api/v1/targets.
type TargetHealth struct {
	ScrapeURL string `json:"scrapeUrl"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// Targets returns the active scrape targets' health.
func (a API) Targets(ctx context.Context) ([]TargetHealth, error) {
	var data struct {
		ActiveTargets []TargetHealth `json:"activeTargets"`
	}
	err := a.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets, err
}

// get calls an API path and decodes the data of a success into out.
func (a API) get(ctx context.Context, path string, q url.Values, out any) error {
	u := a.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s", path, body.Error)
	}
	return json.Unmarshal(body.Data, out)
}
