{
  "targets": [
    {
      "target_name": "podnet",
      "sources": [
        "native/addon.cc",
        "native/util/sys_error.cc",
        "native/util/js_error.cc",
        "native/util/pin_library.cc",
        "native/util/close_later.cc",
        "native/netns/netns_open.cc",
        "native/netns/in_netns.cc",
        "native/netns/hop_promise.cc",
        "native/netns/netns_create.cc",
        "native/netns/netns_binding.cc",
        "native/netlink/attr.cc",
        "native/netlink/engine.cc",
        "native/netlink/deferred_socket.cc",
        "native/netlink/socket_transport.cc",
        "native/netlink/js_transport.cc",
        "native/ipset/record.cc",
        "native/ipset/session.cc",
        "native/ipset/sync_channel.cc",
        "native/ipset/ipset_binding.cc",
        "native/rtnetlink/codec.cc",
        "native/rtnetlink/session.cc",
        "native/rtnetlink/rtnetlink_binding.cc",
        "native/nftables/codec.cc",
        "native/nftables/element_records.cc",
        "native/nftables/expr.cc",
        "native/nftables/session.cc",
        "native/nftables/nftables_binding.cc",
        "native/spawn/spawn_child.cc",
        "native/spawn/spawn_run.cc",
        "native/spawn/spawn_binding.cc",
        "native/spawn/stdin_feed.cc",
        "native/unix/seqpacket_ops.cc",
        "native/unix/fd_waiter.cc",
        "native/unix/op_driver.cc",
        "native/unix/socket_wrap.cc",
        "native/unix/server_wrap.cc",
        "native/unix/unix_binding.cc",
        "native/xtables/xtables_lock.cc",
        "native/xtables/xtables_binding.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "defines": ["NAPI_VERSION=9", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
      "cflags": ["-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [
        ["OS!='linux'", { "type": "none" }]
      ]
    },
    {
      "target_name": "podnet-cni",
      "type": "executable",
      "sources": [
        "native/cni/main.cc",
        "native/cni/cni_output.cc",
        "native/cni/config_scan.cc",
        "native/cni/deadline.cc",
        "native/cni/exchange.cc",
        "native/cni/invocation.cc",
        "native/cni/plugin_config.cc",
        "native/cni/std_streams.cc",
        "native/cni/utf8.cc",
        "native/cni/wire.cc"
      ],
      "include_dirs": ["native"],
      "cflags!": ["-fno-exceptions", "-O3", "-O0"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20", "-O3", "-O0"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-ffunction-sections", "-fdata-sections"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-ffunction-sections", "-fdata-sections"],
      "ldflags": ["-static", "-Wl,--gc-sections", "-s"],
      "conditions": [
        ["OS!='linux'", { "type": "none" }]
      ]
    }
  ]
}
