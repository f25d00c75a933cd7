/*
 * The floor of any MQTT server on this machine, for bench.js mqtt (issue 18):
 * the same few lines of MQTT 3.1.1 as bare-puback-server.ts (CONNACK, PUBACK
 * for a QoS 1 PUBLISH, PINGRESP, DISCONNECT), in C, so that what a round trip
 * costs here is the kernel's, the disk's and the machine's, with neither
 * Node's event loop, libuv nor V8 in it. The gap between this and the Node
 * server is Node's.
 *
 *   bare-puback-server nosub [PORT]          answer only
 *   bare-puback-server durable FILE [PORT]   each QoS 1 PUBLISH is first
 *       appended to FILE (created or truncated) by one pwrite on an O_DSYNC
 *       descriptor (write and sync in one call), then acknowledged: the same
 *       work as bare-puback-server.js durable.
 *
 * Listens on 127.0.0.1 (PORT 0, the default, lets the OS pick) and prints
 * {"port":N} on stdout. Each connection gets a thread doing blocking reads and
 * writes: a sequential round trip then costs one read, (one pwrite,) one send
 * and nothing else, fewer calls than an epoll loop would make, and several
 * connections are still served at once.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A packet larger than this closes its connection: the bench's are ~120 bytes, and a bound keeps a bad length from taking the memory. */
#define packet_bytes_max (16u << 20)

/* The durable file's descriptor (-1: nosub) and the offset of the next append, shared by every connection. */
static int durable_fd = -1;
static uint64_t durable_offset;

static void fail(const char *what) {
  perror(what);
  exit(1);
}

/* One answer, one send (as the Node server writes each answer once); MSG_NOSIGNAL: a peer gone is that connection's end, not the server's. */
static int answer(int socket, const unsigned char *bytes, size_t length) {
  while (length > 0) {
    ssize_t sent = send(socket, bytes, length, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return -1;
    bytes += sent;
    length -= (size_t)sent;
  }
  return 0;
}

/* Appends a PUBLISH to the durable file: the range is taken atomically, so connections never overwrite each other. */
static int append_durably(const unsigned char *bytes, size_t length) {
  uint64_t offset = __atomic_fetch_add(&durable_offset, length, __ATOMIC_RELAXED);
  while (length > 0) {
    ssize_t written = pwrite(durable_fd, bytes, length, (off_t)offset);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return -1;
    bytes += written;
    length -= (size_t)written;
    offset += (uint64_t)written;
  }
  return 0;
}

/*
 * Answers one whole packet (type byte at `packet`, its body `body` bytes further, `body_length` long);
 * 1 when the connection is to end (DISCONNECT), -1 on an error.
 */
static int handle(int socket, const unsigned char *packet, size_t body, size_t body_length) {
  static const unsigned char connack[] = {0x20, 0x02, 0x00, 0x00};
  static const unsigned char pingresp[] = {0xd0, 0x00};
  switch (packet[0] >> 4) {
  case 1:
    return answer(socket, connack, sizeof connack);
  case 3: {
    if ((packet[0] & 0x06) == 0) return 0; /* QoS 0: nothing to acknowledge */
    if (body_length < 2) return -1;
    /* [MQTT-3.3.2] the topic (a 2-byte length, then the name), then the packet id. */
    size_t id_at = body + 2 + ((size_t)packet[body] << 8 | packet[body + 1]);
    if (id_at + 2 > body + body_length) return -1;
    if (durable_fd >= 0 && append_durably(packet, body + body_length) != 0) return -1;
    unsigned char puback[] = {0x40, 0x02, packet[id_at], packet[id_at + 1]};
    return answer(socket, puback, sizeof puback);
  }
  case 12:
    return answer(socket, pingresp, sizeof pingresp);
  case 14:
    return 1;
  default:
    return 0;
  }
}

/*
 * Handles the whole packets in bytes[0, length); returns how many bytes they took (the rest is a packet split across
 * reads, kept for the next one), or -1 when the connection is to end. `*need` is the size a pending packet will have.
 */
static long handle_packets(int socket, const unsigned char *bytes, size_t length, size_t *need) {
  size_t at = 0;
  *need = 0;
  while (at < length) {
    /* Fixed header: the type byte, then the remaining length in 1-4 bytes of 7 bits each [MQTT-2.2.3]. */
    size_t remaining = 0, cursor = at + 1;
    unsigned shift = 0;
    for (;;) {
      if (cursor >= length) return (long)at;
      unsigned char byte = bytes[cursor++];
      remaining |= (size_t)(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
      if (shift == 28) return -1;
    }
    size_t packet_length = cursor - at + remaining;
    if (packet_length > packet_bytes_max) return -1;
    if (at + packet_length > length) {
      *need = packet_length;
      return (long)at;
    }
    int handled = handle(socket, bytes + at, cursor - at, remaining);
    if (handled != 0) return -1;
    at += packet_length;
  }
  return (long)at;
}

static void *serve(void *argument) {
  int socket = (int)(intptr_t)argument;
  size_t capacity = 64 * 1024, have = 0;
  unsigned char *bytes = malloc(capacity);
  while (bytes != NULL) {
    ssize_t got = read(socket, bytes + have, capacity - have);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    have += (size_t)got;
    size_t need;
    long used = handle_packets(socket, bytes, have, &need);
    if (used < 0) break;
    have -= (size_t)used;
    memmove(bytes, bytes + used, have);
    if (need > capacity) {
      unsigned char *grown = realloc(bytes, need);
      if (grown == NULL) break;
      bytes = grown;
      capacity = need;
    }
  }
  free(bytes);
  close(socket);
  return NULL;
}

int main(int argc, char **argv) {
  const char *usage = "usage: bare-puback-server nosub [PORT] | durable FILE [PORT]\n";
  const char *port_argument = NULL;
  if (argc >= 2 && strcmp(argv[1], "nosub") == 0 && argc <= 3) {
    port_argument = argc == 3 ? argv[2] : NULL;
  } else if (argc >= 3 && strcmp(argv[1], "durable") == 0 && argc <= 4) {
    durable_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC | O_CLOEXEC, 0644);
    if (durable_fd < 0) fail(argv[2]);
    port_argument = argc == 4 ? argv[3] : NULL;
  } else {
    fputs(usage, stderr);
    return 2;
  }
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) fail("socket");
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  address.sin_port = htons((uint16_t)(port_argument == NULL ? 0 : atoi(port_argument)));
  socklen_t address_length = sizeof address;
  if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0) fail("bind");
  if (listen(listener, 128) != 0) fail("listen");
  if (getsockname(listener, (struct sockaddr *)&address, &address_length) != 0) fail("getsockname");
  printf("{\"port\":%d}\n", ntohs(address.sin_port));
  fflush(stdout);
  for (;;) {
    int connection = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      fail("accept");
    }
    /* As Cairn's listener and the Node server: an answer leaves at once, never held back for more (Nagle). */
    int on = 1;
    setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    pthread_t thread;
    if (pthread_create(&thread, NULL, serve, (void *)(intptr_t)connection) != 0) {
      close(connection);
      continue;
    }
    pthread_detach(thread);
  }
}
