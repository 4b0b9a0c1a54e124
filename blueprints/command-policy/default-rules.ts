import type { CommandRule } from "./command-rule.ts";

/*
 * The default rules. All but one have scope "command": they are anchored at the start of
 * one command unit (see shell-units.ts), whose words are single-space separated, so a
 * rule reads "command word, then somewhere a word like ...". Each pattern is built from
 * lookaheads over `.*` and character classes that cannot overlap in more than one way;
 * command-policy-redos.test.ts has recheck prove every one of them free of super-linear
 * backtracking. recheck's exact (automaton) checker cannot read lookarounds, so a pattern
 * is an alternation of `^HEAD(?=.*A)(?=.*B)...` with no lookaround inside HEAD, A or B (see
 * pattern-pieces.ts for why that is linear when A and B are). Keep new rules so.
 */

// A word ends at a space or the end of the unit.
const end = "(?: |$)";
// A word the command units marked as naming the root, a home, a top-level folder or
// anything under the folders the system runs from, globs (`/*/`, `/???/`) included; a
// word holding a credentials path; a file the command downloaded (see protected-paths.ts).
const precious = String.raw`\x01`;
const credentials = String.raw`[\x03\x04]`;
const downloaded = String.raw`\x02`;
const recursiveFlag = String.raw`(?:-[a-qs-zA-QS-Z]*[rR][a-zA-Z]*|--recursive)`;
const capitalRecursiveFlag = String.raw`(?:-[a-zA-QS-Z]*R[a-zA-Z]*|--recursive)`;
const disk = String.raw`/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|dm-|md|loop|nbd|rbd|zd|mapper/|sr|root)`;
// A redirect word (`>`, `2>>`, `&>`, `>|`) followed by its target word.
const redirectTo = (target: string) => String.raw`(?=.*(?:^| )(?:\d{0,3}|&)(?:>>?|>\|) ${target})`;
// A path into an ~/.ssh folder, as the units mark it.
const sshDir = String.raw`\x04`;
// Where a rule names a path itself, the path may carry the protected mark.
const etc = String.raw`\x01?/etc`;
const shells = String.raw`(?:(?:ba|z|da|k|a|mk|fi)?sh|\$SHELL)`;
const interpreters = String.raw`(?:python[\d.]{0,6}|perl|ruby|node|php|lua)`;
// A shell or interpreter that reads its program from standard input.
const readsProgramFromStdin = String.raw`(?:(?:${shells}|${interpreters})(?: -[^ ]*)*$|${shells} -s(?: [^ ]*)*$)`;
const downloaders = String.raw`(?:curl|wget|fetch|aria2c|nc|ncat|socat|http|https|xh)`;
const decoders = String.raw`(?:base64|base32|basenc|xxd|openssl|uudecode|gpg|rev|gunzip|zcat|xzcat|bzcat)`;
// A `$(name)` or `<(name)` in a word: the output of such a command, used as text.
const substitutionOf = (names: string) => String.raw`[$<]\(${names}\)`;
const runsText = String.raw`(?:eval|source|\.|exec|${shells}|${interpreters})`;
// Commands that read a file's bytes or send it somewhere (ls, chmod, ssh -i, mkdir do not).
const readersAndCopiers = String.raw`(?:scp|rsync|tar|zip|7z|7za|cpio|cp|mv|ln|install|curl|wget|nc|ncat|socat|rclone|sftp|ftp|gsutil|aws|az|cat|head|tail|less|more|strings|base64|xxd|od|hexdump|gzip|bzip2|xz|zstd|openssl|gpg|mail|mailx|sendmail|dd|tee|docker|podman|git|python[\d.]{0,6}|perl|ruby|node)`;

export const defaultCommandRules: readonly CommandRule[] = [
  {
    id: "rm-recursive-root",
    pattern: String.raw`^rm(?= )(?=.* ${recursiveFlag}${end})(?=.* ${precious})`,
    reason: "recursive delete of the root, a home folder or a system folder",
    severity: "error",
    scope: "command",
  },
  {
    id: "rm-no-preserve-root",
    pattern: String.raw`^rm(?= )(?=.* --no-preserve-root${end})`,
    reason: "rm --no-preserve-root exists only to delete the whole file system",
    severity: "error",
    scope: "command",
  },
  {
    id: "find-delete-root",
    pattern: String.raw`^find(?= )(?=.* ${precious})(?=.* (?:-delete|-exec(?:dir)? (?:\S*/)?(?:rm|shred|unlink|(?:ba|da|z)?sh))${end})`,
    reason: "find deleting everything under the root, a home folder or a system folder",
    severity: "error",
    scope: "command",
  },
  {
    id: "delete-listed-root",
    pattern: String.raw`^(?:find|ls|echo|printf|locate|du)(?= )(?=[^|]* ${precious})(?=.* \| (?:rm|shred|unlink)${end})`,
    reason: "deletes what a listing of the root, a home folder or a system folder names (through xargs)",
    severity: "error",
    scope: "command",
  },
  {
    id: "mv-system-folder",
    pattern: String.raw`^mv(?= )(?=.* ${precious}[^ ]* [^ ])`,
    reason: "moving the root, a home folder or a system folder away breaks the machine",
    severity: "error",
    scope: "command",
  },
  {
    id: "mkfs",
    pattern: String.raw`^(?:mkfs(?:\.\w{1,12})?|mke2fs|mkswap|wipefs|sfdisk|sgdisk|blkdiscard)${end}`,
    reason: "formats, wipes or repartitions a disk",
    severity: "error",
    scope: "command",
  },
  {
    id: "dd-to-device",
    pattern: String.raw`^dd(?= )(?=.* of=(?:${disk}|/dev/(?:mem|kmem|port)${end}))`,
    reason: "dd writing onto a device overwrites a disk",
    severity: "error",
    scope: "command",
  },
  {
    id: "write-to-disk-device",
    pattern: String.raw`^${redirectTo(disk)}|^(?:tee|shred|truncate|fallocate|badblocks)(?= )(?=.* ${disk})|^(?:cp|mv|install|rsync|pv|ddrescue|cat)(?= )(?=.* ${disk}\S*$)`,
    reason: "writing onto a disk device overwrites it",
    severity: "error",
    scope: "command",
  },
  {
    id: "power-off",
    pattern: String.raw`^(?:shutdown|reboot|halt|poweroff)${end}|^systemctl(?= )(?=.* (?:poweroff|reboot|halt|kexec|rescue|emergency)${end})`,
    reason: "shuts down or restarts the machine every other run shares",
    severity: "error",
    scope: "command",
  },
  {
    id: "init-runlevel",
    pattern: String.raw`^(?:init|telinit) [06]${end}`,
    reason: "init 0 / init 6 halts or reboots the machine",
    severity: "error",
    scope: "command",
  },
  {
    id: "write-etc",
    pattern: String.raw`^${redirectTo(String.raw`${etc}(?:/| |$)`)}|^tee(?= )(?=.* ${etc}(?:/| |$))|^(?:cp|mv|install|ln|rsync|scp)(?= )(?=.* ${etc}(?:/\S*)?$)|^sed(?= )(?=.* (?:-[a-hj-zA-Z]*i\S*|--in-place\S*)${end})(?=.* ${etc}/)`,
    reason: "writes system configuration under /etc",
    severity: "error",
    scope: "command",
  },
  {
    id: "pipe-download-to-shell",
    pattern: String.raw`^${downloaders}${end}(?=.* \| ${readsProgramFromStdin})|^${runsText}(?= )(?=.*${substitutionOf(downloaders)})|^(?=[$<]\()(?=[^ ]*${substitutionOf(downloaders)})`,
    reason: "runs a script downloaded from the network without reading it",
    severity: "error",
    scope: "command",
  },
  {
    id: "download-then-run",
    pattern: String.raw`^(?:${shells}|source|\.)(?: -\S+)* ${downloaded}|^${downloaded}`,
    reason: "runs a shell script the same command downloaded, unread",
    severity: "error",
    scope: "command",
  },
  {
    id: "decoded-to-shell",
    pattern: String.raw`^${decoders}${end}(?=.* \| ${readsProgramFromStdin})|^${runsText}(?= )(?=.*${substitutionOf(decoders)})|^(?=[$<]\()(?=[^ ]*${substitutionOf(decoders)})`,
    reason: "runs decoded text as a program, the usual way to hide what a command does",
    severity: "error",
    scope: "command",
  },
  {
    id: "fork-bomb",
    pattern: String.raw`\(\)\s*\{\s*[\w:]+\s*\|\s*[\w:]+\s*&\s*\}`,
    reason: "a fork bomb exhausts the process table of the whole machine",
    severity: "error",
  },
  {
    id: "chmod-recursive-root",
    pattern: String.raw`^(?:chmod|chown|chgrp)(?= )(?=.* ${capitalRecursiveFlag}${end})(?=.* ${precious})`,
    reason: "recursive permission or owner change of the root or a system folder",
    severity: "error",
    scope: "command",
  },
  {
    id: "chmod-system-folder",
    pattern: String.raw`^(?:chmod|chown|chgrp)(?= )(?=.* \x01?(?:/|/\*|/(?:bin|boot|dev|etc|home|lib|lib64|opt|root|sbin|srv|sys|tmp|usr|var)|(?:/usr)?/s?bin/${shells})${end})`,
    reason: "permission or owner change of the root, a top-level folder or a shell",
    severity: "error",
    scope: "command",
  },
  {
    id: "setuid-bit",
    pattern: String.raw`^chmod(?= )(?=.* (?:[ugoa]*[+=][rwxXt]*s\S*|0?[4-7][0-7]{3})${end})`,
    reason: "a setuid program runs as its owner: on a shell or script it hands out that account",
    severity: "error",
    scope: "command",
  },
  {
    id: "kill-all-processes",
    pattern: String.raw`^kill(?: -s ?\S+| -[^ s]\S*)+ -1${end}`,
    reason: "kill -1 signals every process the user may signal, the worker included",
    severity: "error",
    scope: "command",
  },
  {
    id: "ssh-keys-write",
    pattern: String.raw`^${redirectTo(sshDir)}|^(?:tee|sed|truncate)(?= )(?=.* ${sshDir})|^(?:cp|mv|ln|install|rsync|scp)(?= )(?=.* ${sshDir}[^ ]*$)|^dd(?= )(?=.* of=${sshDir})`,
    reason: "writes into ~/.ssh (authorized_keys, config): a way in for someone else",
    severity: "error",
    scope: "command",
  },
  {
    id: "crontab",
    pattern: String.raw`^crontab(?:$| [^-]| -$| -[^l]| -l[^ ])|^${redirectTo("/var/spool/cron")}`,
    reason: "installs a scheduled job that outlives the run",
    severity: "error",
    scope: "command",
  },
  {
    id: "copy-credentials",
    pattern: String.raw`^${readersAndCopiers}(?= )(?=.*${credentials})`,
    reason: "reads or copies credentials (~/.ssh, ~/.aws, ~/.config/gcloud...) that no run needs",
    severity: "error",
    scope: "command",
  },
  {
    id: "container-host-root",
    pattern: [
      String.raw`(?:-v|--volume)[ =]?${precious}`,
      String.raw`(?:-v|--volume)[ =]?/(?:var/)?run/docker\.sock`,
      String.raw`--mount [^ ]*${precious}`,
      String.raw`(?:--privileged|--pid[ =]host)${end}`,
    ]
      .map((option) => String.raw`^(?:docker|podman|nerdctl)(?= )(?=.* (?:run|create)${end})(?=.* ${option})`)
      .join("|"),
    reason: "a container with the host's root, a system folder or full privileges is root on the host",
    severity: "error",
    scope: "command",
  },
  {
    id: "sudo",
    pattern: String.raw`^(?:sudo|doas)${end}`,
    reason: "runs are unattended: sudo would wait for a password that never comes",
    severity: "warning",
    scope: "command",
  },
];
