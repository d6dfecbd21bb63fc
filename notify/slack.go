package notify

import (
	"context"
	"fmt"
	"net/http"

	"github.com/calricon/driftscan/config"
	"github.com/slack-go/slack"
)

// Slack posts messages with github.com/slack-go/slack: to a channel through
// the Web API's chat.postMessage with a bot token, or to an incoming
// webhook, which posts to its own channel.
type Slack struct {
	api     *slack.Client // bot token
	webhook string        // incoming webhook URL
	http    *http.Client
}

// NewSlack returns a sender for cfg. secret is the bot token when cfg names
// a token, else the incoming webhook URL; hc carries every request (retries
// live in its transport).
func NewSlack(cfg config.Slack, secret string, hc *http.Client) *Slack {
	if cfg.Mode() == config.SlackWebhook {
		return &Slack{webhook: secret, http: hc}
	}
	apiURL := cfg.APIURL
	if apiURL == "" {
		apiURL = config.DefaultSlackAPIURL
	}
	// slack-go sends chat.postMessage's token as a form field; the header is
	// what Slack recommends and what proxies check.
	// https://docs.slack.dev/authentication/tokens#using
	api := slack.New(secret, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(bearer{hc: hc, token: secret}))
	return &Slack{api: api, http: hc}
}

// Post sends one message. channel is ignored by an incoming webhook.
func (s *Slack) Post(ctx context.Context, channel, text string, blocks []slack.Block) error {
	if s.api == nil {
		msg := &slack.WebhookMessage{Text: text, Blocks: &slack.Blocks{BlockSet: blocks}}
		if err := slack.PostWebhookCustomHTTPContext(ctx, s.webhook, s.http, msg); err != nil {
			return fmt.Errorf("incoming webhook: %w", err)
		}
		return nil
	}
	if _, _, err := s.api.PostMessageContext(ctx, channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)); err != nil {
		return fmt.Errorf("chat.postMessage to %s: %w", channel, err)
	}
	return nil
}

// bearer adds the bot token as an Authorization header.
type bearer struct {
	hc    *http.Client
	token string
}

func (b bearer) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.hc.Do(req)
}
