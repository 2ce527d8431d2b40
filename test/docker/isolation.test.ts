import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { sessionDigest } from '../../src/core/session';
import { GVISOR_HOST_PIDS } from '../../src/docker/container/spec';
import { LABEL, LABEL_SCHEMA } from '../../src/docker/container/labels';
import { TEST_VERSION, byEngine, byRuntime, inspect, run, testSpec, uniqueSessionKey, useDocker, warmSandbox, type Inspected } from './helpers';

/** The capabilities Podman gives a container by default, all of which CapDrop ALL removes. */
const PODMAN_DEFAULT_CAPABILITIES = ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'NET_RAW', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'];

describe('sandbox isolation (integration)', function () {
  const sandboxes = useDocker();

  it('has no network: connections fail, names do not resolve, only lo exists', async function () {
    const provider = sandboxes.makeProvider();
    const code = [
      'import os, socket',
      'def tcp(host, port):',
      '    try:',
      '        socket.create_connection((host, port), timeout=3).close()',
      "        return 'connected'",
      '    except socket.gaierror:',
      "        return 'no name resolution'",
      '    except OSError as e:',
      "        return f'errno {e.errno}'",
      'def udp(host, port):',
      '    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
      '    try:',
      "        s.sendto(b'x', (host, port))",
      "        return 'sent'",
      '    except OSError as e:',
      "        return f'errno {e.errno}'",
      "print('tcp 1.1.1.1:53', tcp('1.1.1.1', 53))",
      "print('udp 8.8.8.8:53', udp('8.8.8.8', 53))",
      "print('tcp example.com:443', tcp('example.com', 443))",
      "print(sorted(os.listdir('/sys/class/net')))",
    ].join('\n');
    const r = await run(provider, uniqueSessionKey('network'), code);
    // 101 is ENETUNREACH: with only a loopback interface there is no route anywhere. gVisor's
    // network stack says EHOSTUNREACH (113) for the same missing route.
    const unreachable = byRuntime({ runc: 101, gvisor: 113 });
    assert.equal(
      r.text,
      ['stdout:', `tcp 1.1.1.1:53 errno ${unreachable}`, `udp 8.8.8.8:53 errno ${unreachable}`, 'tcp example.com:443 no name resolution', "['lo']"].join('\n'),
    );
  });

  it('runs unprivileged on a read-only root with writable HOME and TMPDIR under /sandbox', async function () {
    const provider = sandboxes.makeProvider();
    const code = [
      'import errno, os, tempfile',
      'print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())',
      "status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())",
      "for k in ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']:",
      "    print(k, status.get(k, 'absent').strip())",
      // Asked of the kernel (PR_GET_NO_NEW_PRIVS): gVisor's /proc/self/status has no such line.
      "print('NoNewPrivs', __import__('ctypes').CDLL(None).prctl(39, 0, 0, 0, 0))",
      "for path in ['/etc/new-file', '/usr/new-file', '/new-file']:",
      '    try:',
      "        open(path, 'w')",
      "        print(path, 'written')",
      '    except OSError as e:',
      '        print(path, errno.errorcode[e.errno])',
      "for d in ['/etc/new-dir', '/usr/lib/new-dir']:",
      '    try:',
      '        os.mkdir(d)',
      "        print(d, 'made')",
      '    except OSError as e:',
      '        print(d, errno.errorcode[e.errno])',
      "home, tmp = os.environ['HOME'], os.environ['TMPDIR']",
      'print(home, tmp, tempfile.gettempdir())',
      "for d in [home, tmp]:",
      "    p = os.path.join(d, 'probe.txt')",
      "    open(p, 'w').write('ok')",
      '    print(p, open(p).read())',
      'fd, name = tempfile.mkstemp()',
      'print(os.path.dirname(name))',
    ].join('\n');
    // In the warm runner, started by the engine: a program that ran by `docker exec` instead (a
    // runner not ready yet on a loaded machine) has no supplementary groups under Podman, whose
    // exec sets none, where Docker's sets the primary group. Either way the gid is 65534 alone.
    const key = uniqueSessionKey('hardening');
    await warmSandbox(provider, key);
    const r = await run(provider, key, code);
    assert.equal(
      r.text,
      [
        'stdout:',
        '65534 65534 65534 65534 [65534]',
        'CapInh 0000000000000000',
        'CapPrm 0000000000000000',
        'CapEff 0000000000000000',
        'CapBnd 0000000000000000',
        // gVisor's /proc/self/status has no ambient set (nor can a process raise one there).
        byRuntime({ runc: 'CapAmb 0000000000000000', gvisor: 'CapAmb absent' }),
        'NoNewPrivs 1',
        // gVisor checks the directory's permission before the read-only mount: EACCES, still no file.
        ...['/etc/new-file', '/usr/new-file', '/new-file'].map((p) => `${p} ${byRuntime({ runc: 'EROFS', gvisor: 'EACCES' })}`),
        '/etc/new-dir EROFS',
        '/usr/lib/new-dir EROFS',
        '/sandbox/home /sandbox/tmp /sandbox/tmp',
        '/sandbox/home/probe.txt ok',
        '/sandbox/tmp/probe.txt ok',
        '/sandbox/tmp',
      ].join('\n'),
    );
  });

  it('is created with the hardened host config, the given limits and its labels', async function () {
    const limits = { memoryMb: 192, cpus: 0.5, pidsLimit: 48, workAreaMb: 24 };
    const provider = sandboxes.makeProvider({ limits });
    const key = uniqueSessionKey('inspect');
    const r = await run(provider, key, "print('up')");
    assert.equal(r.text, 'stdout:\nup');

    const info = await inspect(r.sandboxId);
    const h = info.HostConfig;
    assert.equal(h.NetworkMode, 'none');
    assert.equal(h.ReadonlyRootfs, true);
    // Podman reports the capabilities it dropped by name: all it would give (none is left, as the
    // hardening test reads from /proc/self/status).
    assert.deepEqual(h.CapDrop, byEngine({ docker: ['ALL'], podman: PODMAN_DEFAULT_CAPABILITIES }));
    assert.deepEqual(h.CapAdd ?? [], []);
    assert.equal(h.Privileged, false);
    assert.deepEqual(h.SecurityOpt, ['no-new-privileges']);
    assert.equal(h.Memory, 192 * 1024 * 1024);
    assert.equal(h.MemorySwap, 192 * 1024 * 1024);
    assert.equal(h.NanoCpus, 500_000_000);
    // Under gVisor its own kernel counts the processes (RLIMIT_NPROC) and the cgroup only bounds
    // gVisor's host threads.
    assert.equal(h.PidsLimit, byRuntime({ runc: 48, gvisor: GVISOR_HOST_PIDS }));
    assert.deepEqual(
      h.Ulimits,
      byEngine({
        docker: byRuntime({
          runc: [{ Name: 'core', Soft: 0, Hard: 0 }],
          gvisor: [
            { Name: 'core', Soft: 0, Hard: 0 },
            { Name: 'nproc', Soft: 48, Hard: 48 },
          ],
        }),
        // Podman's own names; nofile and nproc set so that Podman does not raise them itself.
        podman: [
          { Name: 'RLIMIT_NOFILE', Soft: 4096, Hard: 4096 },
          { Name: 'RLIMIT_CORE', Soft: 0, Hard: 0 },
          { Name: 'RLIMIT_NPROC', Soft: 16384, Hard: 16384 },
        ],
      }),
    );
    const name = info.Name.replace(/^\//, '');
    // Podman lists the work-area volume among the binds too: a named volume, no host path.
    assert.deepEqual(h.Binds ?? [], byEngine({ docker: [], podman: [`${name}:/sandbox:rw,rprivate,nosuid,nodev,rbind`] }));
    assert.deepEqual(h.Devices ?? [], []);
    assert.equal(info.Config.User, '65534:65534');
    // Podman keeps a local image under localhost/, and reports it so.
    assert.equal(info.Config.Image, byEngine({ docker: '', podman: 'localhost/' }) + provider.active.get(key)!.image);
    assert.equal(info.Config.NetworkDisabled, byEngine({ docker: true, podman: undefined }));
    assert.deepEqual(Object.keys(info.NetworkSettings.Networks ?? {}), []);

    // The only writable mount is the session's volume at /sandbox: no host path. Under gVisor /tmp
    // is also covered, by an empty read-only tmpfs (gVisor would mount a writable one there); under
    // Podman /run, /tmp and /var/tmp, where it would mount writable ones, as HostConfig.Tmpfs.
    assert.deepEqual(
      h.Tmpfs ?? {},
      byEngine({
        docker: {},
        podman: Object.fromEntries(['/run', '/tmp', '/var/tmp'].map((p) => [p, 'ro,size=1m,mode=0755,rprivate,nosuid,nodev,tmpcopyup'])),
      }),
    );
    const covers = info.Mounts.filter((m: Inspected) => m.Destination !== '/sandbox');
    assert.deepEqual(
      covers.map((m: Inspected) => [m.Type, m.Destination, m.RW]),
      byRuntime({ runc: [], gvisor: [['tmpfs', '/tmp', false]] }),
    );
    assert.equal(info.Mounts.length, 1 + covers.length);
    const mount = info.Mounts.find((m: Inspected) => m.Destination === '/sandbox');
    assert.equal(mount.Type, 'volume');
    assert.equal(mount.Name, name);
    assert.equal(mount.Destination, '/sandbox');
    assert.equal(mount.RW, true);

    const chosen = provider.active.get(key)!.runtimeChoice;
    const expectedLabels = {
      [LABEL.managed]: LABEL_SCHEMA,
      [LABEL.ownerKind]: 'cli',
      [LABEL.ownerHost]: os.hostname(),
      [LABEL.ownerPid]: String(process.pid),
      [LABEL.session]: sessionDigest(key),
      [LABEL.version]: TEST_VERSION,
      // The runtime it was made under, as the provider chose it, and the setting it was made for.
      [LABEL.runtime]: chosen.name,
      [LABEL.runtimeOption]: chosen.runtime ?? '',
      [LABEL.runtimeReason]: chosen.reason,
      [LABEL.runtimeRequest]: testSpec().runtime ?? '',
    };
    const ours = Object.fromEntries(Object.entries(info.Config.Labels as Record<string, string>).filter(([k]) => k.startsWith('dev.codeact-sandbox.')));
    assert.deepEqual(ours, expectedLabels);

    // The volume: a tmpfs of the work-area size owned by the sandbox user, with the same labels.
    const volume = await inspect(name, 'volume');
    // Podman refuses size= (it wants a quota of its own for it): the same bound in 4 KiB pages.
    assert.deepEqual(
      volume.Options,
      byEngine({
        docker: { device: 'tmpfs', o: 'size=24m,uid=65534,gid=65534,mode=0700', type: 'tmpfs' },
        podman: { GID: '65534', UID: '65534', device: 'tmpfs', o: 'nr_blocks=6144,uid=65534,gid=65534,mode=0700', type: 'tmpfs' },
      }),
    );
    assert.deepEqual(volume.Labels, expectedLabels);
  });
});
