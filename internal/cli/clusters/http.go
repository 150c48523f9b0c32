package clusters

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
)

func decodeJSON(resp *http.Response, v any) error {
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// unwrapURL drops url.Error's "Get <url>:" prefix; the caller names the server.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
