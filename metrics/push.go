package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// Push replaces the metrics of the group job/<job>[/<name>/<value>...] on
// the Pushgateway at pushURL (http://, https://, or host:port for plain
// HTTP) with g's metrics (an HTTP PUT, see
// https://github.com/prometheus/pushgateway#put-method), so series of the
// previous run that this run no longer has disappear.
//
// grouping adds labels to the group's key; a sharded scan must give each
// shard its own group (for example {"shard": "2"}), or every shard's push
// would replace the others'. Credentials in pushURL (https://user:pass@host)
// are sent as basic auth and never appear in an error. A nil client means
// http.DefaultClient.
func Push(ctx context.Context, pushURL, job string, g prometheus.Gatherer, client *http.Client, grouping map[string]string) error {
	if !strings.Contains(pushURL, "://") {
		pushURL = "http://" + pushURL // host:port, as the Pushgateway's own clients take it
	}
	u, err := url.Parse(pushURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("pushgateway URL %q: want http:// or https:// and a host", redact(pushURL))
	}
	if client == nil {
		client = http.DefaultClient
	}
	user := u.User
	u.User = nil
	p := push.New(u.String(), job).Gatherer(g).Client(client)
	if user != nil {
		pass, _ := user.Password()
		p = p.BasicAuth(user.Username(), pass)
	}
	for name, value := range grouping {
		p = p.Grouping(name, value)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push metrics to %s (job %q): %w", u.Redacted(), job, scrub(err, user))
	}
	return nil
}

// redact hides a password in a URL that did not parse.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		return scheme + "://xxxxx@" + rest[at+1:]
	}
	return raw
}

// scrub removes the password from err's text, should a library quote it.
func scrub(err error, user *url.Userinfo) error {
	if user == nil {
		return err
	}
	pass, ok := user.Password()
	if !ok || pass == "" || !strings.Contains(err.Error(), pass) {
		return err
	}
	return scrubbed{msg: strings.ReplaceAll(err.Error(), pass, "xxxxx"), err: err}
}

// scrubbed is an error whose text had a password taken out; errors.Is and
// errors.As still see the original.
type scrubbed struct {
	msg string
	err error
}

func (s scrubbed) Error() string { return s.msg }
func (s scrubbed) Unwrap() error { return s.err }
