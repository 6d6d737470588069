/** SeqpacketServer: a listening unix SOCK_SEQPACKET socket. */
import { withCallerStack } from '../errors.js';
import { native, type RawSeqpacketServerHandle } from '../native.js';
import { checkInteger, checkOptions } from '../validate.js';
import { UnixEndpoint } from './endpoint.js';
import { checkSocketPath, checkTimeout, type SeqpacketAcceptOptions, type SeqpacketListenOptions } from './options.js';
import { type SeqpacketSocket, socketFromHandle } from './socket.js';

/**
 * SeqpacketServer listens on a unix SOCK_SEQPACKET socket file. Accepts are served in call order; an awaited
 * accept() keeps the process alive, a server nobody accepts on does not. close() it (or `using` it); one dropped
 * unclosed is closed, and its file removed, when collected.
 */
export class SeqpacketServer extends UnixEndpoint<RawSeqpacketServerHandle> {
  /** mode is the socket file's permissions as set. */
  readonly mode: number;

  private constructor(handle: RawSeqpacketServerHandle, path: string, mode: number) {
    super(handle, path, 'seqpacket server');
    this.mode = mode;
  }

  /**
   * SeqpacketServer.listen binds and listens at options.path with exactly options.mode. A stale socket file there
   * (no listener answers) is replaced. Throws InvalidArgumentError for bad options (a path over 107 bytes, a mode
   * outside 0..0o777, ...), a PodnetSystemError naming the path: `EADDRINUSE` when a server is listening there,
   * `EEXIST` when the path is a file that is not a socket, `ENOENT` / `EACCES` for its folder, ...
   */
  static listen(options: SeqpacketListenOptions): SeqpacketServer {
    const opts = checkOptions<SeqpacketListenOptions>('options', options);
    const path = checkSocketPath('options.path', opts.path);
    const mode = opts.mode === undefined ? 0o600 : checkInteger('options.mode', opts.mode, 0, 0o777);
    const backlog = opts.backlog === undefined ? 16 : checkInteger('options.backlog', opts.backlog, 1, 65535);
    return new SeqpacketServer(new native.SeqpacketServerHandle(path, mode, backlog), path, mode);
  }

  /**
   * accept resolves the next connection, with its peer's credentials. Rejects with InvalidArgumentError for bad
   * options, a PodnetSystemError with syscall `accept4` (`ETIMEDOUT` at the deadline, `EMFILE`, ...), and
   * `ERR_UNIX_CLOSED` when the server is or gets closed first.
   */
  async accept(options?: SeqpacketAcceptOptions): Promise<SeqpacketSocket> {
    const caller = new Error('accept');
    const opts = checkOptions<SeqpacketAcceptOptions>('options', options);
    const timeoutMs = checkTimeout('options.timeoutMs', opts.timeoutMs);
    const handle = await withCallerStack(this.liveHandle().accept(timeoutMs), caller);
    return socketFromHandle(handle, this.path);
  }
}
