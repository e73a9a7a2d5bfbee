package dev.chargeonce.web;

import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.quarkus.arc.Unremovable;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.vertx.VertxOptionsCustomizer;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.impl.Http1xServerRequest;
import io.vertx.core.http.impl.HttpServerConnection;
import io.vertx.core.spi.tracing.SpanKind;
import io.vertx.core.spi.tracing.TagExtractor;
import io.vertx.core.spi.tracing.VertxTracer;
import io.vertx.core.tracing.TracingOptions;
import io.vertx.core.tracing.TracingPolicy;
import jakarta.inject.Singleton;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Map;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * What the HTTP server refuses before any route runs, answered in the API's error shape: what its decoder refuses
 * (a control character in a header such as {@code DEL} or {@code NUL}, a header line without a colon, a malformed
 * request line: {@code 400 request_malformed}; a request line over
 * {@code quarkus.http.limits.max-initial-line-length}: {@code 414 uri_too_long}; headers over
 * {@code quarkus.http.limits.max-header-size}: {@code 431 headers_too_large}), and a request target that is not a URI
 * ({@code %zz}, {@code |}, a {@code NUL} in the path: {@code 400 request_malformed}), which Quarkus refuses next.
 * Each answer is HTTP/1.1, {@code Content-Type: application/json}, {@code Connection: close}: the decoder discards
 * whatever follows such a request, so the connection cannot carry another.
 *
 * <p>Vert.x answers the decoder's refusals with its invalid-request handler, a bare status ({@code HTTP/1.0} for a
 * request line it could not read), and Quarkus the target's with a bare {@code 400}.
 * {@code HttpServer#invalidRequestHandler} would replace the first, but Quarkus creates and starts its HTTP server
 * itself and offers no way to set one ({@code HttpServerOptionsCustomizer} reaches the options, not the server).
 * Vert.x reads the handler from the request's connection once the request has begun, and the one piece of the
 * application it calls in between is the tracer, which it asks about every request it decoded, valid or not
 * ({@link VertxTracer#receiveRequest}). So this installs a tracer (through Quarkus' supported
 * {@link VertxOptionsCustomizer}) that traces nothing: for a request that failed to decode, or whose target Quarkus
 * would refuse (then it marks the request as failed), it sets this class's answer as its connection's
 * invalid-request handler; for the placeholder request the decoder makes of a line it could not read, it makes the
 * answer HTTP/1.1. That reaches two Vert.x internals ({@link HttpServerConnection}'s setter,
 * {@code Http1xServerRequest#nettyRequest}); {@code MalformedRequestsTest} fails if an upgrade moves them. The
 * answers go through Vert.x' response, so the HTTP metrics count them (under {@link UnmatchedRequests#LABEL}). It
 * applies to every HTTP server of the application's Vert.x: the management interface's refusals are shaped too.
 */
@Singleton
@Unremovable
public class MalformedRequests implements VertxOptionsCustomizer {

    private static final Logger LOG = Logger.getLogger(MalformedRequests.class);

    /** {@code Http1xServerRequest#nettyRequest}, package-private; null if this Vert.x has none (then HTTP/1.0 stays). */
    private static final MethodHandle NETTY_REQUEST = nettyRequest();

    /** Quarkus' own switch for its check of the request target, which this class repeats. */
    private static final boolean URI_VALIDATION_DISABLED = Boolean.getBoolean("vertx.disableURIValidation");

    /** The characters besides letters and digits that a URI's path and query take unescaped (RFC 2396's uric). */
    private static final String PLAIN_PUNCTUATION = "/?-._~!$&'()*+,;=:@";

    private final int maxInitialLineLength;
    private final long maxHeaderSize;

    MalformedRequests(@ConfigProperty(name = "quarkus.http.limits.max-initial-line-length", defaultValue = "4096") int maxInitialLineLength,
                      @ConfigProperty(name = "quarkus.http.limits.max-header-size", defaultValue = "20K") MemorySize maxHeaderSize) {
        this.maxInitialLineLength = maxInitialLineLength;
        this.maxHeaderSize = maxHeaderSize.asLongValue();
    }

    @Override
    public void accept(VertxOptions options) {
        if (options.getTracingOptions() != null && options.getTracingOptions().getFactory() != null) {
            // Vert.x has one tracer: taking the place of another would silently end its tracing.
            throw new IllegalStateException("A Vert.x tracer is configured already; " + MalformedRequests.class.getName()
                    + " answers malformed requests through that hook and cannot share it.");
        }
        options.setTracingOptions(new TracingOptions().setFactory(tracingOptions -> new DecodeFailures()));
    }

    /** The answer to a request the decoder refused: its error, then the connection closed. */
    void refuse(HttpServerRequest request) {
        Throwable cause = request.decoderResult().cause();
        Future<Void> answered;
        if (cause instanceof TooLongHttpLineException) {
            answered = EdgeAnswers.refuse(request.response(), 414, "uri_too_long",
                    "The request line is longer than " + maxInitialLineLength + " bytes; send the parameters in fewer bytes.");
        } else if (cause instanceof TooLongHttpHeaderException) {
            answered = EdgeAnswers.refuse(request.response(), 431, "headers_too_large",
                    "The request's headers are larger than " + maxHeaderSize + " bytes.");
        } else if (cause instanceof UnreadableTarget) {
            answered = EdgeAnswers.refuse(request.response(), 400, "request_malformed",
                    "The request's path or query is not a valid URI: percent-encode control characters, spaces and "
                            + "characters such as | { } \\ ^, and follow every % with two hexadecimal digits.");
        } else {
            answered = EdgeAnswers.refuse(request.response(), 400, "request_malformed",
                    "The request is not valid HTTP/1.1: a header holds a control character, a header line has no colon, "
                            + "or the request line is malformed.");
        }
        answered.onComplete(done -> request.connection().close());
    }

    /** The tracer that traces nothing: it only routes a request that failed to decode to {@link #refuse}. */
    private final class DecodeFailures implements VertxTracer<Object, Object> {

        @Override
        public <R> Object receiveRequest(Context context, SpanKind kind, TracingPolicy policy, R request, String operation,
                                         Iterable<Map.Entry<String, String>> headers, TagExtractor<R> tagExtractor) {
            if (request instanceof HttpServerRequest http && http.connection() instanceof HttpServerConnection connection) {
                if (http.decoderResult().isFailure()) {
                    connection.invalidRequestHandler(MalformedRequests.this::refuse);
                    answerAsHttp11(http);
                } else if (!readableTarget(http.uri()) && failDecoding(http)) {
                    connection.invalidRequestHandler(MalformedRequests.this::refuse);
                }
            }
            return null;
        }
    }

    /**
     * Whether Quarkus reads the request's target: it answers a bare {@code 400} itself, before any route, when
     * {@code java.net.URI} does not parse it (a {@code NUL}, a {@code |}, a {@code %} without two hex digits, ...). The
     * common target (a path of letters, digits and the characters a URI allows unescaped) is told by one scan; only
     * another one is parsed, as Quarkus does.
     */
    static boolean readableTarget(String target) {
        if (target == null) {
            return false;
        }
        if (URI_VALIDATION_DISABLED || plain(target)) {
            return true;
        }
        try {
            new URI(target);
            return true;
        } catch (URISyntaxException e) {
            return false;
        }
    }

    /** A path (not {@code //}, which starts an authority) of characters a URI takes as they are, and no {@code %}. */
    private static boolean plain(String target) {
        if (target.isEmpty() || target.charAt(0) != '/' || target.startsWith("//")) {
            return false;
        }
        for (int i = 1; i < target.length(); i++) {
            char c = target.charAt(i);
            if ((c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && PLAIN_PUNCTUATION.indexOf(c) < 0) {
                return false;
            }
        }
        return true;
    }

    /** Marks a request the decoder took as one it refused, so that Vert.x hands it to the invalid-request handler. */
    private static boolean failDecoding(HttpServerRequest request) {
        HttpMessage message = nettyMessage(request);
        if (message == null) {
            return false; // Quarkus answers it, bare
        }
        message.setDecoderResult(DecoderResult.failure(new UnreadableTarget()));
        return true;
    }

    /** Why a request whose line was decoded is refused all the same: its target is not a URI. */
    private static final class UnreadableTarget extends RuntimeException {
        UnreadableTarget() {
            super("the request target is not a URI", null, false, false);
        }
    }

    /**
     * A request line the decoder could not read becomes a placeholder request of HTTP/1.0, and Vert.x answers in the
     * request's version; the answer is made as it begins, right after the tracer.
     */
    private static void answerAsHttp11(HttpServerRequest request) {
        HttpMessage message = nettyMessage(request);
        if (message != null && message.protocolVersion() != HttpVersion.HTTP_1_1) {
            message.setProtocolVersion(HttpVersion.HTTP_1_1);
        }
    }

    /** The Netty request beneath Vert.x' HTTP/1.x request; null for HTTP/2, or if this Vert.x has it elsewhere. */
    private static HttpMessage nettyMessage(HttpServerRequest request) {
        if (NETTY_REQUEST == null || !(request instanceof Http1xServerRequest)) {
            return null;
        }
        try {
            return NETTY_REQUEST.invoke(request) instanceof HttpMessage message ? message : null;
        } catch (Throwable e) {
            LOG.debugf("no Netty request beneath %s: %s", request, e);
            return null;
        }
    }

    private static MethodHandle nettyRequest() {
        try {
            return MethodHandles.privateLookupIn(Http1xServerRequest.class, MethodHandles.lookup())
                    .findVirtual(Http1xServerRequest.class, "nettyRequest", MethodType.methodType(io.netty.handler.codec.http.HttpRequest.class));
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warnf("Malformed requests will be answered in the HTTP version Vert.x picks: %s", e);
            return null;
        }
    }
}
