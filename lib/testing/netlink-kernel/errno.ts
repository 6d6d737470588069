/**
 * The Linux errno values the fake kernels answer with (asm-generic/errno-base.h, asm-generic/errno.h), positive;
 * replies carry them negated.
 */

/** ERRNO maps the names of the errno values the fakes use to their numbers. */
export const ERRNO = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  E2BIG: 7,
  EBADF: 9,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EBUSY: 16,
  EEXIST: 17,
  ENODEV: 19,
  EINVAL: 22,
  ENFILE: 23,
  ENOSPC: 28,
  EMLINK: 31,
  ERANGE: 34,
  ENAMETOOLONG: 36,
  ELOOP: 40,
  ENODATA: 61,
  EPROTO: 71,
  EOVERFLOW: 75,
  ERESTART: 85,
  EOPNOTSUPP: 95,
  EAFNOSUPPORT: 97,
  ENETDOWN: 100,
  ENETUNREACH: 101,
  EHOSTUNREACH: 113,
} as const;
