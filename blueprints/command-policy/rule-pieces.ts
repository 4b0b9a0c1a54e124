/*
 * The pieces the default rules are written from (default-rules.ts, access-rules.ts). Each
 * is a regular-expression source over one command unit (see shell-units.ts), whose words
 * are single-space separated and carry the marks of protected-paths.ts.
 */

// A word ends at a space or the end of the unit.
export const end = "(?: |$)";
// A word the command units marked as naming the root, a home, a top-level folder or
// anything under the folders the system runs from, globs (`/*/`, `/???/`) included; a
// word holding a credentials path; a file the command downloaded; a whole data folder or
// mount (`/data`, `/var/lib`, `~/.config`); a home's shell startup file (`~/.bashrc`; see
// protected-paths.ts).
export const precious = String.raw`\x01`;
export const credentials = String.raw`[\x03\x04]`;
export const downloaded = String.raw`\x02`;
export const dataFolder = String.raw`\x05`;
export const startupFile = String.raw`\x06`;
export const recursiveFlag = String.raw`(?:-[a-qs-zA-QS-Z]*[rR][a-zA-Z]*|--recursive)`;
export const capitalRecursiveFlag = String.raw`(?:-[a-zA-QS-Z]*R[a-zA-Z]*|--recursive)`;
export const disk = String.raw`/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|dm-|md|loop|nbd|rbd|zd|mapper/|sr|root)`;
// A redirect word (`>`, `2>>`, `&>`, `>|`) followed by its target word.
export const redirectTo = (target: string) => String.raw`(?=.*(?:^| )(?:\d{0,3}|&)(?:>>?|>\|) ${target})`;
// A path into an ~/.ssh folder, as the units mark it.
export const sshDir = String.raw`\x04`;
// Where a rule names a path itself, the path may carry the protected mark.
export const etc = String.raw`\x01?/etc`;
export const shells = String.raw`(?:(?:ba|z|da|k|a|mk|fi)?sh|\$SHELL)`;
export const interpreters = String.raw`(?:python[\d.]{0,6}|perl|ruby|node|php|lua)`;
// A shell or interpreter that reads its program from standard input.
export const readsProgramFromStdin = String.raw`(?:(?:${shells}|${interpreters})(?: -[^ ]*)*$|${shells} -s(?: [^ ]*)*$)`;
export const downloaders = String.raw`(?:curl|wget|fetch|aria2c|nc|ncat|socat|http|https|xh)`;
export const decoders = String.raw`(?:base64|base32|basenc|xxd|openssl|uudecode|gpg|rev|gunzip|zcat|xzcat|bzcat)`;
// A `$(name)` or `<(name)` in a word: the output of such a command, used as text.
export const substitutionOf = (names: string) => String.raw`[$<]\(${names}\)`;
export const runsText = String.raw`(?:eval|source|\.|exec|${shells}|${interpreters})`;
// Commands that read a file's bytes or send it somewhere (ls, chmod, ssh -i, mkdir do not).
export const readersAndCopiers = String.raw`(?:scp|rsync|tar|zip|7z|7za|cpio|cp|mv|ln|install|curl|wget|nc|ncat|socat|rclone|sftp|ftp|gsutil|aws|az|cat|head|tail|less|more|strings|base64|xxd|od|hexdump|gzip|bzip2|xz|zstd|openssl|gpg|mail|mailx|sendmail|dd|tee|docker|podman|git|python[\d.]{0,6}|perl|ruby|node)`;
