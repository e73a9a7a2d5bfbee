package dev.chargeonce.web;

import java.time.Duration;

/**
 * An answer the API gives on purpose, in the one error shape
 * {@code {"error": {"type", "code", "message", "param"}}}. Thrown anywhere; rendered by {@link ErrorMappers}.
 */
public class ApiException extends RuntimeException {

    private final int status;
    private final String type;
    private final String code;
    private final String param;
    private final Duration retryAfter;

    public ApiException(int status, String type, String code, String message, String param, Duration retryAfter) {
        super(message);
        this.status = status;
        this.type = type;
        this.code = code;
        this.param = param;
        this.retryAfter = retryAfter;
    }

    public static ApiException invalidRequest(String code, String message, String param) {
        return new ApiException(400, "invalid_request_error", code, message, param, null);
    }

    public static ApiException unavailable(String code, String message, Duration retryAfter) {
        return new ApiException(503, "api_error", code, message, null, retryAfter);
    }

    public int status() {
        return status;
    }

    public String type() {
        return type;
    }

    public String code() {
        return code;
    }

    public String param() {
        return param;
    }

    /** Null when the answer carries no Retry-After. */
    public Duration retryAfter() {
        return retryAfter;
    }
}
