package dev.chargeonce.web;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/** The one error shape of the API: {@code {"error": {"type", "code", "message", "param"}}}. */
public record ErrorBody(@JsonProperty("error") Detail error) {

    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record Detail(String type, String code, String message, String param) {
    }

    public static ErrorBody of(String type, String code, String message, String param) {
        return new ErrorBody(new Detail(type, code, message, param));
    }
}
