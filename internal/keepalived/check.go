// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xlb-dev/xlb/internal/config"
)

// keepalived's check defaults, where they differ from xlb's.
const (
	keepalivedDelayLoop = 60 * time.Second // delay_loop
	keepalivedTimeout   = 5 * time.Second  // connect_timeout
)

// param is a check setting and the statement that gave it.
type param struct {
	n    *Node
	d    config.Duration
	i    int
	s    string
	used bool
}

// checkParams are the check settings that keepalived takes at the
// virtual_server, real_server and checker levels, each level being the
// default of the next.
type checkParams struct {
	interval, timeout, retry, host *param
}

// checkParam reads n if it is a check setting of any level, reporting
// what it cannot map; it returns whether n was one, and the setting.
func (c *converter) checkParam(n *Node, p *checkParams, report func(*Node, string)) (bool, *param) {
	args := n.Args()
	var set **param
	v := &param{n: n}
	switch k := n.Keyword(); k {
	case "delay_loop", "connect_timeout":
		d, err := durationArg(args)
		if err != nil {
			report(n, err.Error())
			return true, nil
		}
		v.d, set = d, &p.interval
		if k == "connect_timeout" {
			set = &p.timeout
		}
	case "retry", "nb_get_retry", "nb_sock_retry":
		i, err := strconv.Atoi(strings.Join(args, " "))
		if err != nil || i < 0 {
			report(n, "want a number of retries")
			return true, nil
		}
		v.i, set = i, &p.retry
	case "virtualhost":
		if len(args) != 1 {
			report(n, "want virtualhost NAME")
			return true, nil
		}
		v.s, set = args[0], &p.host
	case "delay_before_retry":
		report(n, whyRetry)
	case "warmup":
		report(n, "xlb has no random delay before a real's first check")
	case "alpha":
		if len(args) == 1 && isFalse(args[0]) {
			c.mapped(n)
		} else {
			report(n, whyAlpha)
		}
	case "log_all_failures":
		report(n, "xlb has no per-check failure logging setting")
	default:
		return false, nil
	}
	if set == nil {
		return true, nil
	}
	*set = v
	c.mapped(n)
	return true, v
}

// builtCheck is one real's check and what its statements say that xlb
// does not take: it is listed only if the check is used.
type builtCheck struct {
	hc      config.HealthCheck
	pending []pendingNote
	urls    int
	urlHost string
	timeout *param // misc_timeout
	reply   bool   // require_reply given
}

// pendingNote is a note or skip that waits for the check to be used.
type pendingNote struct {
	n     *Node
	why   string
	whole bool
}

// note and skip record what the converter's note and skip will say if
// the check is used.
func (b *builtCheck) note(n *Node, why string) {
	b.pending = append(b.pending, pendingNote{n, why, false})
}

func (b *builtCheck) skip(n *Node, why string) {
	b.pending = append(b.pending, pendingNote{n, why, true})
}

// serviceCheck takes the first real's check as the service's and lists
// the other reals' checks that differ from it.
func (c *converter) serviceCheck(vs *vsConf) *config.HealthCheck {
	var first *builtCheck
	for _, r := range vs.reals {
		for i, ck := range r.checks {
			if i > 0 {
				c.skip(ck, "xlb runs one check per real: only the first check is imported")
				continue
			}
			b := c.buildCheck(ck, r)
			switch {
			case first == nil:
				first = b
			case b.hc != first.hc:
				c.skip(ck, fmt.Sprintf("%s in %s", whyDiffers, diffFields(first.hc, b.hc)))
				r.differs = true
				continue
			}
			c.mapped(ck)
			for _, p := range b.pending {
				if p.whole {
					c.skip(p.n, p.why)
				} else {
					c.note(p.n, p.why)
				}
			}
		}
	}
	for _, p := range []*param{vs.params.interval, vs.params.timeout, vs.params.retry, vs.params.host} {
		if p != nil && !p.used {
			c.note(p.n, "no check of this virtual server that xlb imports uses it")
		}
	}
	for _, r := range vs.reals {
		own := [][2]*param{{r.params.interval, vs.params.interval}, {r.params.timeout, vs.params.timeout},
			{r.params.retry, vs.params.retry}, {r.params.host, vs.params.host}}
		for _, p := range own {
			switch {
			case p[0] == nil || p[0] == p[1]:
			case r.differs:
				c.note(p[0].n, "only this real's check uses it, and that check is not imported")
			case !p[0].used:
				c.note(p[0].n, "no check of this real that xlb imports uses it")
			}
		}
	}
	if first == nil {
		return nil
	}
	for _, r := range vs.reals {
		if len(r.checks) == 0 && !r.others {
			c.note(r.node, "this real has no check in keepalived; xlb checks it as it checks the service's other reals")
		}
	}
	hc := first.hc
	return &hc
}

// buildCheck converts one checker of a real.
func (c *converter) buildCheck(ck *Node, r *realConf) *builtCheck {
	b := &builtCheck{hc: config.HealthCheck{Type: checkTypes[ck.Keyword()], Rise: 1}}
	p := r.params // the checker's own settings override the real's
	var local []*param
	for _, s := range c.children(ck) {
		if ok, v := c.checkParam(s, &p, b.skip); ok {
			if v != nil {
				local = append(local, v)
			}
			continue
		}
		switch b.hc.Type {
		case "tcp":
			c.connOption(s, r, b)
		case "http", "https":
			c.httpOption(s, r, b)
		case "exec":
			c.miscOption(s, r, b)
		case "udp":
			c.udpOption(s, r, b)
		}
	}
	c.finishCheck(ck, b, p)
	for _, v := range local {
		if !v.used {
			b.skip(v.n, fmt.Sprintf("%s does not use it", ck.Keyword()))
		}
	}
	return b
}

// finishCheck sets the interval, timeout, fall and host from the
// settings of all levels, with keepalived's defaults.
func (c *converter) finishCheck(ck *Node, b *builtCheck, p checkParams) {
	hc := &b.hc
	hc.Interval = config.Duration(keepalivedDelayLoop)
	if p.interval != nil {
		hc.Interval, p.interval.used = p.interval.d, true
	}
	tp := p.timeout
	switch {
	case hc.Type == "exec":
		tp = b.timeout
		hc.Timeout = hc.Interval // keepalived's misc_timeout defaults to delay_loop
	case tp == nil:
		hc.Timeout = config.Duration(keepalivedTimeout)
	}
	if tp != nil {
		hc.Timeout, tp.used = tp.d, true
	}
	if hc.Timeout > hc.Interval {
		if tp != nil {
			b.note(tp.n, fmt.Sprintf("xlb's check timeout is at most its interval: %s imported", hc.Interval))
		}
		hc.Timeout = hc.Interval
	}
	retry := 1 // keepalived's default, but MISC_CHECK's
	if hc.Type == "exec" {
		retry = 0
	}
	if p.retry != nil {
		retry, p.retry.used = p.retry.i, true
	}
	hc.Fall = retry + 1 // a real goes down after the check and its retries fail
	if hc.Type == "http" || hc.Type == "https" {
		hc.Host = b.urlHost
		if p.host != nil {
			p.host.used = true // overridden by the url's own virtualhost, if any
			if hc.Host == "" {
				hc.Host = p.host.s
			}
		}
		if b.urls == 0 {
			b.note(ck, "no url: xlb checks path /")
		}
	}
	if hc.Type == "exec" && hc.User == "" && !c.scriptUser {
		b.note(ck, whyScriptUser)
	}
	if hc.Type == "udp" && !b.reply {
		b.note(ck, "without require_reply keepalived passes a check that gets no reply (only an ICMP error fails it); xlb needs a reply")
	}
}

// connOption reads a connection option of a TCP, HTTP, SSL or UDP check.
func (c *converter) connOption(s *Node, r *realConf, b *builtCheck) {
	args := s.Args()
	switch s.Keyword() {
	case "connect_port":
		port, err := parsePort(strings.Join(args, " "))
		if err != nil {
			b.skip(s, err.Error())
			return
		}
		if port != r.checkPort {
			b.hc.Port = port
		}
		c.mapped(s)
	case "connect_ip":
		b.skip(s, "xlb checks the real's own address")
	case "bindto", "bind_if", "bind_port":
		b.skip(s, whySource)
	case "fwmark":
		b.skip(s, "xlb does not mark check packets")
	default:
		b.skip(s, "not a check setting xlb knows")
	}
}

// httpOption reads a statement of HTTP_GET or SSL_GET.
func (c *converter) httpOption(s *Node, r *realConf, b *builtCheck) {
	switch s.Keyword() {
	case "url":
		if b.urls++; b.urls > 1 {
			b.skip(s, "xlb checks one URL: only the first url block is imported")
			return
		}
		c.url(s, b)
	case "http_protocol":
		b.skip(s, "xlb's http check has no HTTP version setting")
	case "fast_recovery":
		b.skip(s, "xlb has no fast recovery: a real comes back after rise successes")
	case "enable_sni", "sni_name", "tls_compliant":
		b.skip(s, whyTLS)
	default:
		c.connOption(s, r, b)
	}
}

// url reads a url block: path, status_code, virtualhost and a fixed
// regex map; the rest is listed.
func (c *converter) url(u *Node, b *builtCheck) {
	c.mapped(u)
	var regex *Node
	noMatch, status := false, false
	for _, s := range c.children(u) {
		args := s.Args()
		switch k := s.Keyword(); {
		case k == "path" && len(args) == 1:
			b.hc.Path = args[0]
			c.mapped(s)
		case k == "status_code":
			status = true
			c.statusCode(s, b)
		case k == "digest":
			b.skip(s, whyDigest)
		case k == "virtualhost" && len(args) == 1:
			b.urlHost = args[0]
			c.mapped(s)
		case k == "regex" && len(args) == 1:
			regex = s
		case k == "regex_no_match":
			noMatch = true
			b.skip(s, "xlb cannot fail a check because the body matches")
		case strings.HasPrefix(k, "regex_"):
			b.skip(s, whyRegexes)
		case k == "tls_compliant":
			b.skip(s, whyTLS)
		default:
			b.skip(s, "not a url setting xlb knows")
		}
	}
	switch {
	case regex == nil:
	case noMatch:
		b.skip(regex, "xlb cannot fail a check because the body matches")
	case strings.ContainsAny(regex.Args()[0], `\.^$*+?()[]{}|`):
		b.skip(regex, "xlb matches a fixed string in the body, not a regular expression")
	default:
		b.hc.ExpectBody = regex.Args()[0]
		c.mapped(regex)
	}
	if !status {
		b.note(u, "no status_code: keepalived accepts any 2xx status, xlb expects 200")
	}
}

// statusCode reads "status_code CODE|LOW-HIGH ...": xlb expects one
// status; 200 when it is among them, else the first.
func (c *converter) statusCode(s *Node, b *builtCheck) {
	pick, has200 := 0, false
	for _, a := range s.Args() {
		lo, hi, found := strings.Cut(a, "-")
		l, err1 := strconv.Atoi(lo)
		h, err2 := l, error(nil)
		if found {
			h, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || l < 100 || h > 599 || h < l {
			b.skip(s, fmt.Sprintf("%q is not a status code or range", a))
			return
		}
		if pick == 0 {
			pick = l
		}
		has200 = has200 || (l <= 200 && 200 <= h)
	}
	if pick == 0 {
		b.skip(s, "want status_code CODE")
		return
	}
	if has200 {
		pick = 200
	}
	b.hc.ExpectStatus = pick
	c.mapped(s)
	if len(s.Args()) > 1 || strings.Contains(s.Args()[0], "-") {
		b.note(s, fmt.Sprintf("xlb expects one status: %d imported", pick))
	}
}

// miscOption reads a statement of MISC_CHECK.
func (c *converter) miscOption(s *Node, r *realConf, b *builtCheck) {
	args := s.Args()
	switch s.Keyword() {
	case "misc_path":
		if len(args) == 0 {
			b.skip(s, "want misc_path COMMAND")
			return
		}
		c.miscCommand(s, r, b)
		c.mapped(s)
	case "misc_timeout":
		d, err := durationArg(args)
		if err != nil {
			b.skip(s, err.Error())
			return
		}
		b.timeout = &param{n: s, d: d}
		c.mapped(s)
	case "misc_dynamic":
		b.skip(s, "xlb does not set a real's weight from a check's exit status")
	case "user":
		user, group, ok := scriptUser(args)
		if !ok {
			b.skip(s, "want user USERNAME [GROUPNAME]")
			return
		}
		b.hc.User, b.hc.Group = user, group
		c.mapped(s)
	default:
		b.skip(s, "not a MISC_CHECK setting xlb knows")
	}
}

// miscCommand converts misc_path's command. keepalived runs it without
// a shell; xlb does too, unless the command names the real's address,
// which becomes ${XLB_REAL_ADDR} for /bin/sh to put in (shell: true),
// or has syntax that xlb's words refuse (then noted: /bin/sh interprets
// what keepalived passed on as it is).
func (c *converter) miscCommand(s *Node, r *realConf, b *builtCheck) {
	cmd := joinCommand(s.Args())
	b.hc.Command = templateCommand(cmd, r.addr, r.checkPort)
	_, err := config.SplitCommand(cmd)
	b.hc.Shell = err != nil || b.hc.Command != cmd
	var ce *config.CommandError
	switch {
	case errors.As(err, &ce) && ce.Shell:
		b.note(s, fmt.Sprintf("keepalived runs it without a shell, xlb with /bin/sh (shell: true), which interprets the %s at byte %d: check the command", shellWhat(ce), ce.Offset))
	case err != nil:
		b.note(s, fmt.Sprintf("keepalived runs it without a shell, xlb with /bin/sh (shell: true), which reads it otherwise: %v", err))
	}
}

// shellWhat names the shell syntax of a command error.
func shellWhat(ce *config.CommandError) string {
	what, _, _ := strings.Cut(ce.Msg, ",")
	return what
}

// scriptUser reads keepalived's "USERNAME [[:]GROUPNAME]" (MISC_CHECK
// user, script_user). xlb always sets the user's supplementary groups,
// so the ':' that asks keepalived to is dropped; ":" alone is the
// user's primary group.
func scriptUser(args []string) (user, group string, ok bool) {
	switch len(args) {
	case 1:
		return args[0], "", true
	case 2:
		return args[0], strings.TrimPrefix(args[1], ":"), true
	}
	return "", "", false
}

// udpOption reads a statement of UDP_CHECK.
func (c *converter) udpOption(s *Node, r *realConf, b *builtCheck) {
	args := s.Args()
	switch s.Keyword() {
	case "payload":
		if text, ok := hexText(s, b); ok {
			b.hc.Send = text
			c.mapped(s)
		}
	case "require_reply":
		b.reply = true
		if len(args) == 0 { // any reply
			c.mapped(s)
			return
		}
		if strings.ContainsAny(strings.Join(args, ""), "xX") {
			b.skip(s, "xlb expects exact bytes: X wildcards cannot be imported")
			return
		}
		if text, ok := hexText(s, b); ok {
			b.hc.Expect = text
			c.mapped(s)
		}
	case "min_reply_length", "max_reply_length":
		b.skip(s, "xlb does not check a reply's length")
	default:
		c.connOption(s, r, b)
	}
}

// hexText decodes a statement's hex words to text.
func hexText(s *Node, b *builtCheck) (string, bool) {
	data, err := decodeHex(s.Args())
	switch {
	case err != nil:
		b.skip(s, err.Error())
	case len(data) == 0:
		b.skip(s, "want hexadecimal bytes")
	case !utf8.Valid(data):
		b.skip(s, "these bytes are not text (UTF-8): xlb's send and expect are strings")
	default:
		return string(data), true
	}
	return "", false
}

// diffFields names the fields in which two checks differ.
func diffFields(a, b config.HealthCheck) string {
	var out []string
	for _, f := range []struct {
		name string
		diff bool
	}{
		{"type", a.Type != b.Type}, {"interval", a.Interval != b.Interval}, {"timeout", a.Timeout != b.Timeout},
		{"fall", a.Fall != b.Fall}, {"port", a.Port != b.Port}, {"path", a.Path != b.Path}, {"host", a.Host != b.Host},
		{"expect_status", a.ExpectStatus != b.ExpectStatus}, {"expect_body", a.ExpectBody != b.ExpectBody},
		{"send", a.Send != b.Send}, {"expect", a.Expect != b.Expect}, {"command", a.Command != b.Command},
		{"shell", a.Shell != b.Shell}, {"user", a.User != b.User}, {"group", a.Group != b.Group},
	} {
		if f.diff {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, ", ")
}
