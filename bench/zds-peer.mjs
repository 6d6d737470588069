// The proxy end of scenario 7, in a process of its own (as ztunnel is): a FakeZtunnel that acks every request.
// argv: <socket path>. Prints "ready" once its first snapshot is acked; exits when stdin closes.
import { FakeZtunnel } from '../dist/testing/index.js';

const zt = await FakeZtunnel.connect(process.argv[2]);
await zt.waitForSnapshot({ after: 0 });
process.stdout.write('ready\n');
process.stdin.resume();
process.stdin.on('end', () => {
  zt.close();
  process.exit(0);
});
