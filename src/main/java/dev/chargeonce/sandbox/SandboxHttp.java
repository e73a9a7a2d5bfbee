package dev.chargeonce.sandbox;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The sandbox's HTTP/1.1, on a raw socket (JDK only, no framework): one virtual thread per connection, keep-alive,
 * every request handed to {@link SandboxRoutes}. A raw socket lets it do what a real network does and a framework
 * would hide: drop a connection after the charge was made, without an answer (a null {@link Response}).
 */
final class SandboxHttp implements AutoCloseable {

    /** An answer; {@code headers} are added to (or, with an empty value, take out) the default ones. */
    record Response(int status, String body, Map<String, String> headers) {
        static Response json(int status, String body) {
            return new Response(status, body, Map.of());
        }
    }

    private final ServerSocket server;
    private final SandboxRoutes routes;
    private final ExecutorService connections = Executors.newVirtualThreadPerTaskExecutor();
    private volatile boolean closed;

    private SandboxHttp(ServerSocket server, SandboxRoutes routes) {
        this.server = server;
        this.routes = routes;
        Thread acceptor = Thread.ofPlatform().daemon().name("stripe-sandbox-accept").start(this::acceptLoop);
        acceptor.setUncaughtExceptionHandler((t, e) -> { });
    }

    /** Listens on 127.0.0.1 ({@code port} 0 picks a free one) and serves {@code routes}. */
    static SandboxHttp start(int port, SandboxRoutes routes) throws IOException {
        ServerSocket socket = new ServerSocket();
        socket.setReuseAddress(true);
        socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1024);
        return new SandboxHttp(socket, routes);
    }

    int port() {
        return server.getLocalPort();
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        connections.shutdownNow();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket socket = server.accept();
                socket.setTcpNoDelay(true);
                connections.submit(() -> serve(socket));
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            InputStream in = new BufferedInputStream(socket.getInputStream());
            OutputStream out = socket.getOutputStream();
            while (true) {
                String requestLine = readLine(in);
                if (requestLine == null || requestLine.isEmpty()) {
                    return;
                }
                Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
                for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
                    int colon = line.indexOf(':');
                    if (colon > 0) {
                        headers.put(line.substring(0, colon).trim(), line.substring(colon + 1).trim());
                    }
                }
                int length = Integer.parseInt(headers.getOrDefault("Content-Length", "0"));
                byte[] body = in.readNBytes(length);
                if (body.length < length) {
                    // The client died while sending: like Stripe, never execute a request that did not arrive whole.
                    return;
                }
                String[] parts = requestLine.split(" ");
                Response response = routes.handle(parts[0], parts[1], headers, new String(body, StandardCharsets.UTF_8));
                if (response == null) {
                    // Drop: the connection dies without an answer, as a network failure after the charge would.
                    socket.setSoLinger(true, 0);
                    return;
                }
                byte[] payload = response.body().getBytes(StandardCharsets.UTF_8);
                Map<String, String> responseHeaders = new LinkedHashMap<>();
                responseHeaders.put("Content-Type", "application/json");
                responseHeaders.put("Request-Id", "req_" + SandboxJson.randomId(14));
                responseHeaders.putAll(response.headers());
                StringBuilder head = new StringBuilder()
                        .append("HTTP/1.1 ").append(response.status()).append(' ').append(reason(response.status())).append("\r\n")
                        .append("Content-Length: ").append(payload.length).append("\r\n");
                responseHeaders.forEach((k, v) -> {
                    if (!v.isEmpty()) {
                        head.append(k).append(": ").append(v).append("\r\n");
                    }
                });
                out.write(head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
                out.write(payload);
                out.flush();
                if ("close".equalsIgnoreCase(headers.get("Connection"))) {
                    return;
                }
            }
        } catch (IOException | RuntimeException e) {
            // The peer went away; nothing to answer.
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream(128);
        int b;
        while ((b = in.read()) != -1) {
            if (b == '\n') {
                break;
            }
            if (b != '\r') {
                line.write(b);
            }
        }
        if (b == -1 && line.size() == 0) {
            return null;
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }

    private static String reason(int status) {
        return switch (status) {
            case 200 -> "OK";
            case 400 -> "Bad Request";
            case 402 -> "Request Failed";
            case 404 -> "Not Found";
            case 409 -> "Conflict";
            case 429 -> "Too Many Requests";
            case 502 -> "Bad Gateway";
            default -> "Server Error";
        };
    }

    /** A form body or a query string, decoded, in its order. */
    static Map<String, String> parseForm(String form) {
        Map<String, String> out = new LinkedHashMap<>();
        if (form == null || form.isEmpty()) {
            return out;
        }
        for (String pair : form.split("&")) {
            int eq = pair.indexOf('=');
            String key = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            out.put(key, value);
        }
        return out;
    }
}
