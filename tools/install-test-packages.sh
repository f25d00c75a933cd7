#!/usr/bin/env bash
# The first step of `npm test`: the Debian packages whose real tools the tests drive,
# installed when missing, so the README's one test command passes on a fresh machine.
# Tests fail (never skip) when a tool is missing; this says how to get it.
#   mosquitto_pub/mosquitto_sub (TLS tests, --cafile)  mosquitto-clients
#   rabbitmqadmin (management API tests)               rabbitmq-server
#   promtool (metrics exposition check)                prometheus
#   chromium (web console, headless via playwright)    chromium
#   paho-mqtt (MQTT 5 check from Python)               python3-paho-mqtt
#   nats-server (the JetStream log's 3-node cluster)   nats-server
#   cc and the C headers (the bench's bare C server)   gcc libc6-dev
# Only the tools are used, so neither service may start: a policy-rc.d that
# answers 101 ("not allowed") keeps invoke-rc.d from starting them.
set -euo pipefail

apt_packages=()
[ -x /usr/bin/rabbitmqadmin ] || apt_packages+=(rabbitmq-server)
[ -x /usr/bin/promtool ] || apt_packages+=(prometheus)
{ command -v mosquitto_pub && command -v mosquitto_sub; } >/dev/null || apt_packages+=(mosquitto-clients)
[ -x /usr/bin/chromium ] || apt_packages+=(chromium)
/usr/bin/python3 -c 'import paho.mqtt.client' 2>/dev/null || apt_packages+=(python3-paho-mqtt)
{ [ -x /usr/sbin/nats-server ] || command -v nats-server; } >/dev/null || apt_packages+=(nats-server)
# gcc only recommends libc6-dev (stdio.h and the rest), and recommends are not installed here.
{ command -v cc && [ -e /usr/include/stdio.h ]; } >/dev/null || apt_packages+=(gcc libc6-dev)
[ ${#apt_packages[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "the tests need these Debian packages: ${apt_packages[*]}" >&2
  echo "install them as root: apt-get install -y --no-install-recommends ${apt_packages[*]}" >&2
  exit 1
fi

echo "installing the Debian packages the tests drive: ${apt_packages[*]}" >&2
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  added_policy=1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "${apt_packages[@]}" >&2
if [ "$added_policy" = 1 ]; then rm -f "$policy"; fi
# Belt and braces: if a service manager started a service anyway, stop it.
for service in rabbitmq-server prometheus nats-server; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$service" 2>/dev/null; then
    systemctl stop "$service" && systemctl disable "$service"
  fi
done
