// SPDX-License-Identifier: Apache-2.0

package keepalived

// Reasons shared by several statements.
const (
	whyVRRP    = "VRRP is not xlb's job: keep keepalived for VRRP"
	whyDaemon  = "a keepalived daemon setting: xlb has no equivalent"
	whyEmail   = "xlb sends no e-mail"
	whyScripts = "xlb runs no notify scripts"
	// whyScriptUser notes an exec check with no user: keepalived's
	// default user is not xlb's.
	whyScriptUser = "keepalived ran it as keepalived_script (or root where that user does not exist), xlb as nobody unless exec_checks.user says otherwise: add user USERNAME, or script_user to global_defs, if it needs another user"
	whyLists      = "xlb has no address allow or deny lists"
	whyFullNAT    = "xlb forwards in FullNAT: the reals see a local IP, not the client"
	whyNoFwmark   = "xlb has no firewall-mark services: write a virtual_server per VIP and port"
)

// topWhy says why top-level statements are not imported.
var topWhy = map[string]string{
	"static_ipaddress": "host addresses are not xlb's job: keep them in keepalived or the network configuration",
	"static_routes":    "host routes are not xlb's job: keep them in keepalived or the network configuration",
	"static_rules":     "host routing rules are not xlb's job: keep them in keepalived or the network configuration",
	"SSL":              "xlb's https check has no CA, certificate or key settings",
	"bfd_instance":     "xlb has no BFD",
	"track_file":       whyVRRP, "track_process": whyVRRP, "garp_group": whyVRRP, "static_track_group": whyVRRP,
	"linkbeat_interfaces": whyVRRP, "interface_up_down_delays": whyVRRP,
	"net_namespace": whyDaemon, "net_namespace_ipvs": whyDaemon, "namespace_with_ipsets": whyDaemon,
	"instance": whyDaemon, "use_pid_dir": whyDaemon, "linkbeat_use_polling": whyDaemon, "child_wait_time": whyDaemon,
	"deny_address_group": whyLists, "blklst_address_group": whyLists, "whtlst_address_group": whyLists,
	"tunnel_group": "xlb has no tunnels",
}

// Reasons for virtual_server and real_server statements.
const (
	whySorry  = "xlb has no sorry server (a real used only while the others are down)"
	whyQuorum = "xlb has no quorum: a service stays up whatever the weight of its live reals"
	// quorum scripts often add the VIP to the host, which xlb does itself
	whyQuorumScripts = "xlb runs no quorum scripts (it adds the VIPs to the host itself)"
	whyFlags         = "xlb has no scheduler flags"
	whyLimits        = "xlb has no rate limits"
)

// vsWhy says why virtual_server statements are not imported.
var vsWhy = map[string]string{
	"sorry_server": whySorry, "sorry_server_inhibit": whySorry, "sorry_server_lvs_method": whySorry,
	"quorum": whyQuorum, "hysteresis": whyQuorum,
	"quorum_up": whyQuorumScripts, "quorum_down": whyQuorumScripts,
	"omega":      "xlb runs no scripts when it stops (omega)",
	"ha_suspend": "xlb does not suspend checks while the VIP is missing",
	"ops":        "xlb has no one-packet scheduling",
	"flag-1":     whyFlags, "flag-2": whyFlags, "flag-3": whyFlags,
	"sh-port": whyFlags, "sh-fallback": whyFlags, "mh-port": whyFlags, "mh-fallback": whyFlags,
	"persistence_engine": "xlb has no persistence engines",
	"smtp_alert":         whyEmail,
	"ip_family":          "only firewall-mark services need ip_family",
	"syn_proxy":          "xlb has no SYN proxy",
	"est_timeout":        "xlb's connection timeouts are for all services (timeouts: in the file)",
	"bps":                whyLimits, "limit_proportion": whyLimits, "bps_limit": whyLimits, "cps_limit": whyLimits,
	"proxy_protocol":        "xlb sends no PROXY protocol header",
	"quic":                  "xlb has no QUIC connection-ID scheduling",
	"expire_quiescent_conn": "xlb keeps a drained or failed real's connections",
	"blklst_group_name":     whyLists, "whtlst_group_name": whyLists,
}

// realWhy says why real_server statements are not imported.
var realWhy = map[string]string{
	"notify_up": whyScripts, "notify_down": whyScripts,
	"uthreshold": "xlb has no per-real connection limits", "lthreshold": "xlb has no per-real connection limits",
	"smtp_alert": whyEmail,
	"snmp_name":  "xlb's reals have no names",
}

// Reasons for check statements.
const (
	whyAlpha   = "xlb starts a real as up; keepalived's alpha starts it down until a check passes"
	whyRetry   = "xlb checks at the interval only: it has no shorter delay before a retry"
	whySource  = "xlb chooses the check's source: the service's first local IP"
	whyDigest  = "xlb does not compare a page digest: it checks the status (and expect_body, a fixed string)"
	whyTLS     = "xlb's https check has no SNI or TLS settings"
	whyRegexes = "xlb has no regular expression settings"
	whyDiffers = "xlb checks every real of a service the same way; this real's check differs from the first real's"
)
