import { accessCommandRules } from "./access-rules.ts";
import type { CommandRule } from "./command-rule.ts";
import {
  capitalRecursiveFlag,
  credentials,
  dataFolder,
  decoders,
  disk,
  downloaded,
  downloaders,
  end,
  etc,
  precious,
  readersAndCopiers,
  readsProgramFromStdin,
  recursiveFlag,
  redirectTo,
  runsText,
  shells,
  sshDir,
  substitutionOf,
} from "./rule-pieces.ts";

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
    id: "rm-data-folder",
    pattern: String.raw`^rm(?= )(?=.* ${recursiveFlag}${end})(?=.* ${dataFolder})`,
    reason:
      "recursive delete of a whole top-level folder or mount (/data, /scratch, /mnt/x), a /var or /var/lib folder, or a home's ~/.config or ~/.local; delete the run's own folder below it instead",
    severity: "error",
    scope: "command",
  },
  {
    id: "delete-credentials",
    pattern: String.raw`^(?:rm|shred|unlink|srm)(?= )(?=.* ${credentials})|^find(?= )(?=.* ${credentials})(?=.* (?:-delete|-exec(?:dir)? (?:\S*/)?(?:rm|shred|unlink|(?:ba|da|z)?sh))${end})`,
    reason: "deletes credentials or keys (~/.ssh, ~/.aws, ~/.gnupg, ~/.kube...): someone loses access to a machine or an account",
    severity: "error",
    scope: "command",
  },
  {
    id: "rsync-delete-root",
    pattern: String.raw`^rsync(?= )(?=.* --del(?:ete(?:-[a-z]+)?)?${end})(?=.* [${precious}${dataFolder}][^ ]*$)`,
    reason: "rsync --delete into the root, a home, a system folder or a whole data folder deletes everything the source lacks",
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
    pattern: String.raw`^${redirectTo(String.raw`${etc}(?:/| |$)`)}|^tee(?= )(?=.* ${etc}(?:/| |$))|^(?:cp|mv|install|ln|rsync|scp)(?= )(?=.* ${etc}(?:/\S*)?$)|^(?:sed|perl)(?= )(?=.* (?:-[a-hj-zA-Z]*i\S*|--in-place\S*)${end})(?=.* ${etc}/)|^(?:rm|unlink|shred|truncate|touch|mkdir)(?= )(?=.* ${etc}/)|^dd(?= )(?=.* of=${etc}/)`,
    reason: "writes or deletes system configuration under /etc",
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
  ...accessCommandRules,
  {
    id: "sudo",
    pattern: String.raw`^(?:sudo|doas)${end}`,
    reason: "runs are unattended: sudo would wait for a password that never comes",
    severity: "warning",
    scope: "command",
  },
];
