export { SeqpacketServer } from './server.js';
export { SeqpacketSocket, type PeerCredentials, type ReceivedMessage } from './socket.js';
export { ReceivedFd } from './received-fd.js';
export { SeqpacketMessageError, type SeqpacketMessageErrorCode } from './errors.js';
export {
  SEQPACKET_MAX_BYTES,
  type SeqpacketListenOptions,
  type SeqpacketAcceptOptions,
  type SeqpacketConnectOptions,
  type SeqpacketSendOptions,
  type SeqpacketReceiveOptions,
  type SendableFd,
} from './options.js';
