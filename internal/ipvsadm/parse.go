// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
)

// MaxTimeout is the largest timeout ipvsadm takes, for -p and --set, in
// seconds (31 days).
const MaxTimeout = 86400 * 31

// DefaultPersistent is -p's timeout when none is given, as ipvsadm's.
const DefaultPersistent = 300

// DefaultScheduler is ipvsadm's scheduler when -A or -E gives none.
const DefaultScheduler = "wlc"

// Schedulers are the schedulers xlb has, by their ipvsadm names.
var Schedulers = []string{"rr", "wrr", "lc", "wlc", "sh", "mh"}

// ipvsSchedulers are ipvsadm's other schedulers, which xlb refuses.
var ipvsSchedulers = []string{"lblc", "lblcr", "dh", "sed", "nq", "fo", "ovf", "twos"}

// Service names a virtual service: its protocol (tcp or udp) and VIP and
// port. The zero Service names none.
type Service struct {
	Proto string
	Addr  netip.AddrPort
}

// IsZero tells whether s names no service.
func (s Service) IsZero() bool { return s.Proto == "" }

func (s Service) String() string {
	return strings.ToUpper(s.Proto) + " " + s.Addr.String()
}

// ListOptions are the listing options of -L, -S and -G.
type ListOptions struct {
	Numeric        bool // -n: always the case; recorded for completeness
	Connection     bool // -c: the connection table
	Timeout        bool // --timeout: the timeouts
	Daemon         bool // --daemon: the sync daemons (xlb has none)
	Stats          bool // --stats: packet and byte counters
	Rate           bool // --rate: counters per second
	Thresholds     bool // --thresholds
	PersistentConn bool // --persistent-conn
	NoSort         bool // --nosort: the daemon's order
	Exact          bool // --exact: counters without K, M, G suffixes
}

// Timeouts are --set's values in seconds; 0 leaves one unchanged.
type Timeouts struct {
	TCP, TCPFin, UDP int
}

// Command is one parsed ipvsadm command line.
type Command struct {
	Kind Kind
	// Service is -t/-u's service; zero when none was given.
	Service Service
	// Scheduler is -s's, or DefaultScheduler for -A and -E without -s.
	Scheduler string
	// Persistent is -p's timeout in seconds; 0 without -p.
	Persistent int
	// Netmask is -M's persistence granularity as the daemon takes it: a
	// dotted mask for IPv4, a prefix length for IPv6; empty without -M
	// or for the whole address.
	Netmask string
	// Real is -r's real server, its port the service's when -r gave none.
	Real netip.AddrPort
	// Weight is -w's, 1 when not given (as ipvsadm).
	Weight int
	// LocalIP is -z's local address or range of them, as keepalived's
	// laddr_group writes it (10.0.3.100-149; DPVS -P/-Q; xlb's -A
	// extension), in its canonical form.
	LocalIP string
	// Ifname is -F's interface name, which xlb ignores.
	Ifname string
	// Timeouts are --set's.
	Timeouts Timeouts
	// List are the listing options.
	List ListOptions
}

// UsageError is a command line ipvsadm refuses (exit status 2).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// IsUsage tells whether err is a usage error.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// parser is the state of one Parse.
type parser struct {
	cmd        Command
	given      [numOpts]bool
	positional []string
	// raw values parsed once every option is read, since their meaning
	// depends on the service (its port and family)
	real, netmask string
	// servicePort: -t/-u gave a port
	servicePort bool
	// laddrIs4: -z's address (the first of a range) is IPv4
	laddrIs4 bool
}

// Parse parses an ipvsadm command line (without the program name). Short
// options combine (-Ln, -At) and take their value attached or as the next
// argument (-w5, -w 5); long options take theirs as --weight=5 or
// --weight 5; -p takes a value only when the next argument is not an
// option. No arguments at all list the table, as ipvsadm does. Errors are
// UsageErrors worded for the operator.
func Parse(args []string) (*Command, error) {
	p := &parser{}
	p.cmd.Weight = 1
	if len(args) == 0 {
		p.cmd.Kind = List
		return &p.cmd, nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.positional = append(p.positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			spec, ok := specByLong(name)
			if !ok {
				return nil, usagef("--%s: unknown option (see ipvsadm -h)", name)
			}
			if !hasVal && spec.arg != noArg {
				val, hasVal, i = nextValue(args, i, spec.arg)
			}
			if hasVal && spec.arg == noArg {
				return nil, usagef("%s: --%s takes no value", a, name)
			}
			if err := p.option(spec, "--"+name, val, hasVal); err != nil {
				return nil, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				spec, ok := specByShort(a[j])
				if !ok {
					return nil, usagef("-%c: unknown option (see ipvsadm -h)", a[j])
				}
				val, hasVal := "", false
				if spec.arg != noArg {
					if j+1 < len(a) {
						val, hasVal = a[j+1:], true
					} else {
						val, hasVal, i = nextValue(args, i, spec.arg)
					}
					j = len(a)
				}
				if err := p.option(spec, "-"+string(spec.short), val, hasVal); err != nil {
					return nil, err
				}
			}
		default:
			p.positional = append(p.positional, a)
		}
	}
	return p.finish()
}

// nextValue takes args[i+1] as an option's value: always when the option
// needs one, only when it does not look like an option when the value is
// optional. It returns the index of the last argument used.
func nextValue(args []string, i int, kind argKind) (string, bool, int) {
	if i+1 >= len(args) {
		return "", false, i
	}
	next := args[i+1]
	if kind == optionalArg && strings.HasPrefix(next, "-") {
		return "", false, i
	}
	return next, true, i + 1
}

// option records one option.
func (p *parser) option(spec optSpec, shown, val string, hasVal bool) error {
	if spec.refused != "" {
		return usagef("%s: %s", shown, spec.refused)
	}
	if spec.arg == needArg && !hasVal {
		return usagef("%s: missing argument", shown)
	}
	if k, ok := commandOf[spec.long]; ok {
		if p.cmd.Kind != None {
			return usagef("multiple commands specified (%s and %s)", p.cmd.Kind, k)
		}
		p.cmd.Kind = k
		return nil
	}
	if id, ok := flagOf[spec.long]; ok {
		return p.set(id)
	}
	switch spec.long {
	case "sort": // the default; a no-op, as in ipvsadm
		return nil
	case "tcp-service", "udp-service":
		if err := p.set(optService); err != nil {
			return err
		}
		proto := strings.TrimSuffix(spec.long, "-service")
		ap, hasPort, err := parseService(val)
		if err != nil {
			return usagef("%s %s: illegal virtual server address[:port]: %v", shown, val, err)
		}
		p.cmd.Service = Service{Proto: proto, Addr: ap}
		p.servicePort = hasPort
	case "scheduler":
		if err := p.set(optScheduler); err != nil {
			return err
		}
		if err := checkScheduler(val); err != nil {
			return usagef("%s %s: %v", shown, val, err)
		}
		p.cmd.Scheduler = val
	case "persistent":
		if err := p.set(optPersistent); err != nil {
			return err
		}
		p.cmd.Persistent = DefaultPersistent
		if hasVal {
			n, err := number(val, 1, MaxTimeout)
			if err != nil {
				return usagef("%s %s: persistence timeout must be 1 to %d seconds", shown, val, MaxTimeout)
			}
			p.cmd.Persistent = n
		}
	case "netmask":
		p.netmask = val
		return p.set(optNetmask)
	case "real-server":
		p.real = val
		return p.set(optReal)
	case "fullnat":
		return p.set(optForward)
	case "gatewaying", "masquerading", "ipip":
		return usagef("%s (%s): xlb forwards in FullNAT only: use -b (or leave the method out)", shown, spec.long)
	case "weight":
		if err := p.set(optWeight); err != nil {
			return err
		}
		n, err := number(val, 0, 65535)
		if err != nil {
			return usagef("%s %s: weight must be 0 to 65535", shown, val)
		}
		p.cmd.Weight = n
	case "laddr":
		if err := p.set(optLaddr); err != nil {
			return err
		}
		canon, first, err := config.ParseLocalIPs(val)
		if err != nil {
			return usagef("%s %s: illegal local address: %v", shown, val, err)
		}
		p.cmd.LocalIP, p.laddrIs4 = canon, first.Is4()
	case "ifname":
		p.cmd.Ifname = val
		return p.set(optIfname)
	default:
		return usagef("%s: unknown option (see ipvsadm -h)", shown)
	}
	return nil
}

// set records that an option was given; each may be given once.
func (p *parser) set(id optID) error {
	if p.given[id] {
		return usagef("multiple '%s' options specified", optNames[id])
	}
	p.given[id] = true
	return nil
}

// finish checks the command against its options and parses what depends
// on the whole line.
func (p *parser) finish() (*Command, error) {
	c := &p.cmd
	switch c.Kind {
	case None:
		return nil, usagef("no command given (try ipvsadm -h)")
	case Help, Version:
		return c, nil
	}
	if err := p.checkOptions(); err != nil {
		return nil, err
	}
	if c.Kind == SetTimeouts {
		if len(p.positional) < 3 {
			return nil, usagef("--set option requires 3 timeout values (tcp tcpfin udp)")
		}
		var vals [3]int
		for i, s := range p.positional[:3] {
			n, err := number(s, 0, MaxTimeout)
			if err != nil {
				return nil, usagef("--set %s: invalid timeout value: want 0 (unchanged) to %d seconds", s, MaxTimeout)
			}
			vals[i] = n
		}
		c.Timeouts = Timeouts{TCP: vals[0], TCPFin: vals[1], UDP: vals[2]}
		p.positional = p.positional[3:]
	}
	if len(p.positional) > 0 {
		return nil, usagef("unexpected argument %s", p.positional[0])
	}
	if c.Kind == AddService || c.Kind == EditService {
		// as ipvsadm: a service without a port takes every port of the
		// VIP, which only a persistent service may do unasked; xlb takes
		// an explicit VIP:0 as asking
		if !p.servicePort && c.Persistent == 0 {
			return nil, usagef("Zero port specified for non-persistent service: give VIP:PORT (VIP:0 for every port of the VIP)")
		}
		if c.Scheduler == "" {
			c.Scheduler = DefaultScheduler
		}
	}
	if p.given[optReal] {
		r, err := parseReal(p.real, c.Service.Addr)
		if err != nil {
			return nil, usagef("-r %s: %v", p.real, err)
		}
		c.Real = r
	}
	if p.given[optNetmask] {
		m, err := parseNetmask(p.netmask, c.Service.Addr.Addr().Is6())
		if err != nil {
			return nil, usagef("-M %s: %v", p.netmask, err)
		}
		c.Netmask = m
	}
	if p.given[optLaddr] && p.laddrIs4 != c.Service.Addr.Addr().Is4() {
		return nil, usagef("-z %s: the local address and the service %s are of different address families", c.LocalIP, c.Service)
	}
	g := p.given
	c.List = ListOptions{Numeric: g[optNumeric], Connection: g[optConnection], Timeout: g[optTimeout],
		Daemon: g[optDaemon], Stats: g[optStats], Rate: g[optRate], Thresholds: g[optThresholds],
		PersistentConn: g[optPersistentConn], NoSort: g[optNoSort], Exact: g[optExact]}
	if c.Kind == List {
		l := c.List
		if ((l.Connection || l.Timeout || l.Daemon) && (l.Stats || l.Rate || l.Thresholds)) ||
			((l.Timeout || l.Daemon) && l.PersistentConn) {
			return nil, usagef("options conflicts in the list command")
		}
	}
	return c, nil
}

// checkOptions applies ipvsadm's table of legal options.
func (p *parser) checkOptions() error {
	row := legal[p.cmd.Kind]
	last := optID(-1)
	for id := optID(0); id < numOpts; id++ {
		rule := row[id]
		if !p.given[id] {
			if rule == '+' {
				return usagef("you need to supply the '%s' option for the '%s' command", optNames[id], p.cmd.Kind)
			}
			continue
		}
		switch rule {
		case 'x':
			return usagef("illegal '%s' option with the '%s' command", optNames[id], p.cmd.Kind)
		case '1':
			if last >= 0 {
				return usagef("the option '%s' conflicts with the '%s' option in the '%s' command",
					optNames[id], optNames[last], p.cmd.Kind)
			}
			last = id
		}
	}
	return nil
}
