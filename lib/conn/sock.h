/*
 * Sockets for the connection helper's out-of-band TCP exchange: "host:port"
 * parsing, listen, non-blocking connect, and message framing over a
 * non-blocking socket (struct rv_msg_rx / rv_msg_tx).
 *
 * Owns: file descriptors it returns (the caller closes them). Never blocks
 * beyond the deadline it is given; never touches handles.
 */
#ifndef RV_CONN_SOCK_H
#define RV_CONN_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conn/wire.h"

#define RV_HOST_MAX 256
#define RV_PORT_MAX 8
#define RV_ADDR_STR_MAX 64

/* Monotonic milliseconds. */
int64_t rv_now_ms(void);
/* The deadline for a timeout (-1: none, as INT64_MAX). */
int64_t rv_deadline(int timeout_ms);
/* Milliseconds left until deadline for poll(2) (-1 for none, 0 when past). */
int rv_ms_left(int64_t deadline);

/* Split "host:port", "[v6]:port", "*:port" or ":port" (host "" = every
 * address). Pure. -EINVAL with a message naming the fault. */
int rv_addr_parse(const char *addr, char host[RV_HOST_MAX], char port[RV_PORT_MAX], const char *func);
/* "192.0.2.1:7471" or "[2001:db8::1]:7471". */
void rv_sockaddr_str(const struct sockaddr *sa, char buf[RV_ADDR_STR_MAX]);

/* Bind and listen (non-blocking, close-on-exec). */
int rv_sock_listen(const char *addr, uint32_t backlog, int *ret_fd, int *ret_port, const char *func);
/* Start a non-blocking connect to addr; completes when the socket is writable. */
int rv_sock_connect_start(const char *addr, int *ret_fd, char peer[RV_ADDR_STR_MAX], const char *func);
/* After POLLOUT on a connecting socket: 0 when connected, else the error. */
int rv_sock_connect_finish(int fd, const char *peer, const char *func);

/* A message being received: the header, then exactly its payload. */
struct rv_msg_rx {
	uint8_t hdr_buf[RV_WIRE_HDR_LEN];
	struct rv_wire_hdr hdr;
	uint8_t payload[RV_WIRE_PAYLOAD_MAX];
	size_t got;     /* bytes of the current message received so far */
	bool have_hdr;
};

/* Read what is available without blocking: 1 when a whole message is in
 * rx (consume it with rv_msg_rx_reset), 0 when more bytes are needed, or a
 * negative errno (-ECONNRESET at EOF mid-message, -ENOTCONN at EOF between
 * messages, framing errors from the header decoder). */
int rv_msg_rx_read(int fd, struct rv_msg_rx *rx, const char *peer, const char *func);
void rv_msg_rx_reset(struct rv_msg_rx *rx);

/* Send all of buf, waiting for the socket to drain until deadline. */
int rv_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline, const char *peer,
		     const char *func);
/* A message without payload (RTU, DISCONNECT, DISCONNECT_ACK). */
int rv_sock_send_empty(int fd, uint8_t type, int64_t deadline, const char *peer, const char *func);
/* Best effort, never waits: tell the peer why we reject it. */
void rv_sock_send_reject(int fd, int errnum, const char *text);

#endif
