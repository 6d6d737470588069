// libFuzzer target: the route codec and its session on replies from the fuzz
// input. Input: 9 control bytes, then frames (fuzz_input.h).
//   0     flags: bits 0-2 ops - 1 (1..8), bit 3 failing sends
//   1-8   eight op bytes; op % 8:
//         0 Links   1 GetLink (by index when the op byte is odd, else by name)
//         2 Addresses   3 Routes   4 Rules   (family from the op byte: AF_UNSPEC, AF_INET or AF_INET6)
//         5 ChangeRoute   6 ChangeRule   (add or delete from the op byte)
//         7 the four decoders directly on the next datagram frame's bytes
// Every decoded object must be what the binding relies on: addresses of
// their family's length, a link with a name; every failure a bounded code.
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "rtnetlink/codec.h"
#include "rtnetlink/session.h"

using podnet::ErrorInfo;
using podnet::fuzz::Bytes;
using podnet::fuzz::CheckError;
using podnet::fuzz::FuzzTransport;
using podnet::fuzz::Touch;
namespace rt = podnet::rt;

namespace {

constexpr size_t kControl = 9;

void CheckAddr(uint8_t family, const std::vector<uint8_t>& a) {
  if (a.empty()) return;
  if (family == AF_INET) FUZZ_CHECK(a.size() == 4);
  if (family == AF_INET6) FUZZ_CHECK(a.size() == 16);
  Touch(a.data(), a.size());
}

void CheckUnknown(const std::vector<rt::RawAttr>& attrs) {
  for (const auto& a : attrs) {
    FUZZ_CHECK(a.type <= 0x3fff);
    Touch(a.data.data(), a.data.size());
  }
}

void Check(const rt::Link& l) {
  Touch(reinterpret_cast<const uint8_t*>(l.name.data()), l.name.size());
  CheckUnknown(l.unknown);
}
void Check(const rt::Address& a) {
  FUZZ_CHECK(!a.address.empty());
  CheckAddr(a.family, a.address);
  CheckAddr(a.family, a.peer);
  CheckUnknown(a.unknown);
}
void Check(const rt::Route& r) {
  for (const auto* v : {&r.dst, &r.src, &r.gateway, &r.prefsrc}) CheckAddr(r.family, *v);
  CheckUnknown(r.unknown);
}
void Check(const rt::Rule& r) {
  CheckAddr(r.family, r.src);
  CheckAddr(r.family, r.dst);
  CheckUnknown(r.unknown);
}

template <typename T>
void CheckAll(const ErrorInfo& err, const std::vector<T>& items) {
  CheckError(err);
  // A failed dump (interrupted every time, a kernel error code, a malformed
  // or missing reply) hands on nothing of what it decoded.
  if (err.failed()) {
    FUZZ_CHECK(items.empty());
    return;
  }
  for (const auto& item : items) Check(item);
}

uint8_t FamilyOf(uint8_t b) {
  static const uint8_t kFamilies[] = {AF_UNSPEC, AF_INET, AF_INET6};
  return kFamilies[(b >> 3) % 3];
}

rt::Route SomeRoute(uint8_t b) {
  rt::Route r;
  r.family = (b & 16) ? AF_INET6 : AF_INET;
  r.table = (b & 32) ? 70000 : 100;
  r.type = RTN_LOCAL;
  r.scope = RT_SCOPE_HOST;
  r.hasOif = true;
  r.oif = 1;
  if (b & 64) {
    r.dstLength = r.family == AF_INET ? 24 : 64;
    r.dst.assign(r.family == AF_INET ? 4 : 16, 0);
    r.dst[0] = 10;
  }
  return r;
}

rt::Rule SomeRule(uint8_t b) {
  rt::Rule r;
  r.family = (b & 16) ? AF_INET6 : AF_INET;
  r.action = FR_ACT_TO_TBL;
  r.table = (b & 32) ? 70000 : 100;
  r.hasPriority = true;
  r.priority = 32764;
  r.hasMark = r.hasMask = true;
  r.mark = 0x111;
  r.mask = 0xfff;
  if (b & 64) r.iifname = "lo";
  return r;
}

// The decoders alone, on bytes that reach them without any engine framing.
void Decoders(const uint8_t* data, size_t len) {
  const char* why = nullptr;
  rt::Link l;
  if (rt::DecodeLink(data, len, &l, &why)) Check(l); else FUZZ_CHECK(why != nullptr);
  rt::Address a;
  if (rt::DecodeAddress(data, len, &a, &why)) Check(a);
  rt::Route r;
  if (rt::DecodeRoute(data, len, &r, &why)) Check(r);
  rt::Rule u;
  if (rt::DecodeRule(data, len, &u, &why)) Check(u);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  uint8_t flags = in.U8();
  uint8_t ops[kControl - 1];
  for (auto& op : ops) op = in.U8();
  size_t rest = in.left();
  const uint8_t* framesAt = in.here();
  auto transport = std::make_unique<FuzzTransport>(&in, 0);
  transport->set_fail_sends((flags & 8) != 0);
  rt::Session s(std::move(transport), 1);
  int count = (flags & 7) + 1;
  for (int i = 0; i < count; i++) {
    uint8_t b = ops[i];
    ErrorInfo err;
    switch (b % 8) {
      case 0: {
        std::vector<rt::Link> out;
        CheckAll(err = s.Links(&out), out);
        break;
      }
      case 1: {
        rt::Link out;
        err = s.GetLink((b & 8) ? 1 : 0, "lo", &out);
        CheckError(err);
        if (!err.failed()) Check(out);
        break;
      }
      case 2: {
        std::vector<rt::Address> out;
        CheckAll(err = s.Addresses(FamilyOf(b), &out), out);
        break;
      }
      case 3: {
        std::vector<rt::Route> out;
        CheckAll(err = s.Routes(FamilyOf(b), &out), out);
        break;
      }
      case 4: {
        std::vector<rt::Rule> out;
        CheckAll(err = s.Rules(FamilyOf(b), &out), out);
        break;
      }
      case 5:
        CheckError(s.ChangeRoute((b & 8) ? RTM_DELROUTE : RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, SomeRoute(b)));
        break;
      case 6:
        CheckError(s.ChangeRule((b & 8) ? RTM_DELRULE : RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, SomeRule(b)));
        break;
      default:
        // The raw frames after the control bytes, each as one message payload.
        Decoders(framesAt, rest);
        break;
    }
  }
  return 0;
}
